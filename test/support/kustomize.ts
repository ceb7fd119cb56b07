import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";

/** One Kubernetes object as a manifest writes it. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

/** The fields of a kustomization this renderer applies; any other field is refused. */
interface Kustomization {
  resources?: string[];
  namespace?: string;
  images?: { name: string; newName?: string; newTag?: string }[];
  replicas?: { name: string; count: number }[];
  patches?: { path: string }[];
}

const KNOWN = new Set([
  "apiVersion",
  "kind",
  "resources",
  "namespace",
  "images",
  "replicas",
  "patches",
]);
const CLUSTER_SCOPED = new Set(["Namespace", "ClusterRole", "ClusterRoleBinding"]);

/** Every document of a YAML file, parsed (a parse error throws). */
export function readYamlDocuments(file: string): unknown[] {
  return parseAllDocuments(readFileSync(file, "utf8")).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]?.message}`);
    return doc.toJS();
  });
}

/**
 * Builds the kustomization in `dir` as `kustomize build` does, for the fields the
 * deployment's kustomizations use (resources, namespace, images, replicas, and patches
 * merged as strategic merges of plain fields), so that a test needs no kustomize binary.
 * A field it does not know throws, rather than being ignored.
 */
export function kustomizeBuild(dir: string): Manifest[] {
  const file = join(dir, "kustomization.yaml");
  const k = readYamlDocuments(file)[0] as Kustomization & Record<string, unknown>;
  for (const field of Object.keys(k)) {
    if (!KNOWN.has(field)) throw new Error(`${file}: the test's renderer does not apply ${field}`);
  }
  const objects: Manifest[] = [];
  for (const resource of k.resources ?? []) {
    const path = join(dir, resource);
    if (statSync(path).isDirectory()) objects.push(...kustomizeBuild(path));
    else objects.push(...(readYamlDocuments(path) as Manifest[]));
  }
  for (const patch of k.patches ?? []) {
    for (const p of readYamlDocuments(join(dir, patch.path)) as Manifest[]) {
      const target = objects.find((o) => o.kind === p.kind && o.metadata.name === p.metadata.name);
      if (target === undefined) throw new Error(`${patch.path}: no ${p.kind} ${p.metadata.name}`);
      merge(target, p);
    }
  }
  for (const o of objects) {
    if (k.namespace !== undefined && !CLUSTER_SCOPED.has(o.kind))
      o.metadata.namespace = k.namespace;
    for (const r of k.replicas ?? []) {
      if (o.kind === "Deployment" && o.metadata.name === r.name)
        (o.spec as { replicas: number }).replicas = r.count;
    }
    for (const container of containersOf(o)) {
      for (const image of k.images ?? []) {
        const [name, tag] = splitImage(container.image);
        if (name !== image.name) continue;
        container.image = `${image.newName ?? name}${(image.newTag ?? tag) ? `:${image.newTag ?? tag}` : ""}`;
      }
    }
  }
  return objects;
}

/** The containers of a Deployment's pod template (none for other kinds). */
export function containersOf(o: Manifest): { image: string; [field: string]: unknown }[] {
  if (o.kind !== "Deployment") return [];
  const spec = o.spec as { template: { spec: { containers: { image: string }[] } } };
  return spec.template.spec.containers;
}

function splitImage(image: string): [string, string | undefined] {
  const at = image.lastIndexOf(":");
  return at > image.lastIndexOf("/")
    ? [image.slice(0, at), image.slice(at + 1)]
    : [image, undefined];
}

function merge(target: Record<string, unknown>, patch: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(patch)) {
    const existing = target[key];
    if (isObject(value) && isObject(existing)) merge(existing, value);
    else target[key] = value;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** The kustomizations of the deployment, as the repository lays them out. */
export const KUSTOMIZE_DIRS = {
  root: "deploy/kubernetes",
  base: "deploy/kubernetes/base",
  example: "deploy/kubernetes/overlays/example",
} as const;
