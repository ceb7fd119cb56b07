import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { afterAll, describe, expect, test } from "vitest";
import { configFromEnv } from "../../server/config.js";
import { freePort } from "../../server/redis/redis-server-process.js";
import { type ServiceProcess, sharedRedisUrl, spawnService } from "../support/harness.js";
import {
  containersOf,
  KUSTOMIZE_DIRS,
  kustomizeBuild,
  type Manifest,
} from "../support/kustomize.js";

// The deployment's manifests, built as kustomize builds them, checked against the
// Kubernetes API's schemas and against the service itself: the settings it reads, the
// probes it answers, the drain it runs.

/** Each kind the manifests use, by apiVersion and kind, with the schema that checks it. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "v1/Service": Service,
  "v1/Namespace": Namespace,
  "apps/v1/Deployment": Deployment,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
};

type Container = {
  name: string;
  image: string;
  ports: { name: string; containerPort: number }[];
  env?: { name: string }[];
  envFrom: ({ configMapRef: { name: string } } | { secretRef: { name: string } })[];
  startupProbe: Probe;
  livenessProbe: Probe;
  readinessProbe: Probe;
  resources: { requests: Record<string, string>; limits: Record<string, string> };
  securityContext: { readOnlyRootFilesystem: boolean; allowPrivilegeEscalation: boolean };
  volumeMounts: { name: string; mountPath: string }[];
};
type Probe = { httpGet: { path: string; port: string | number } };
type PodSpec = {
  terminationGracePeriodSeconds: number;
  securityContext: { runAsNonRoot: boolean; runAsUser: number };
  containers: Container[];
  volumes: { name: string; emptyDir?: object }[];
};

function one(objects: Manifest[], kind: string): Manifest {
  const found = objects.filter((o) => o.kind === kind);
  expect(found.map((o) => o.metadata.name)).toEqual(["suggest-task"]);
  return found[0] as Manifest;
}

function podSpecOf(objects: Manifest[]): PodSpec {
  return (one(objects, "Deployment").spec as { template: { spec: PodSpec } }).template.spec;
}

function containerOf(objects: Manifest[]): Container {
  const [container, ...others] = podSpecOf(objects).containers;
  expect(others).toEqual([]);
  return container as Container;
}

/** The environment the container gets: its ConfigMap's and Secret's keys, then its own env. */
function environmentOf(objects: Manifest[]): Record<string, string> {
  const env: Record<string, string> = {};
  const container = containerOf(objects);
  for (const source of container.envFrom) {
    if ("configMapRef" in source) {
      const map = objects.find(
        (o) => o.kind === "ConfigMap" && o.metadata.name === source.configMapRef.name,
      );
      expect(map, `ConfigMap ${source.configMapRef.name}`).toBeDefined();
      Object.assign(env, (map as unknown as { data: Record<string, string> }).data);
    } else {
      const secret = objects.find(
        (o) => o.kind === "Secret" && o.metadata.name === source.secretRef.name,
      );
      expect(secret, `Secret ${source.secretRef.name}`).toBeDefined();
      Object.assign(env, (secret as unknown as { stringData: Record<string, string> }).stringData);
    }
  }
  for (const e of container.env ?? []) env[e.name] = "";
  return env;
}

/** The TypeScript sources of server/, where every setting is read. */
function serverSources(dir = "server"): string {
  return readdirSync(dir)
    .map((name) => join(dir, name))
    .map((path) =>
      statSync(path).isDirectory()
        ? serverSources(path)
        : path.endsWith(".ts")
          ? readFileSync(path, "utf8")
          : "",
    )
    .join("\n");
}

/** Whether the service reads the environment variable `name` (`env.NAME` or `"NAME"`). */
function serviceReads(sources: string, name: string): boolean {
  return new RegExp(`\\benv\\.${name}\\b|"${name}"`).test(sources);
}

const base = kustomizeBuild(KUSTOMIZE_DIRS.root);
const example = kustomizeBuild(KUSTOMIZE_DIRS.example);

describe.each([
  ["the base", base],
  ["the example overlay", example],
])("%s", (_, objects) => {
  test("every object is valid against the Kubernetes API's schema", () => {
    for (const o of objects) {
      const Model = MODELS[`${o.apiVersion}/${o.kind}`];
      expect(Model, `${o.apiVersion} ${o.kind}`).toBeDefined();
      expect(() => new (Model as NonNullable<typeof Model>)(o as never).validate()).not.toThrow();
    }
  });

  test("the pod runs as a numeric non-root user on a read-only root file system, within limits", () => {
    const pod = podSpecOf(objects);
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(Number.isInteger(pod.securityContext.runAsUser)).toBe(true);
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    const container = containerOf(objects);
    expect(container.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
    // Every mount is an emptyDir of the pod's own.
    for (const mount of container.volumeMounts) {
      expect(pod.volumes.find((v) => v.name === mount.name)?.emptyDir).toBeDefined();
    }
    expect(Object.keys(container.resources.requests).sort()).toEqual(["cpu", "memory"]);
    expect(Object.keys(container.resources.limits).sort()).toEqual(["cpu", "memory"]);
  });

  test("the Service's port `grpc` speaks h2c to the container's port, and the budget covers the pods", () => {
    const service = one(objects, "Service").spec as {
      selector: Record<string, string>;
      ports: { name: string; targetPort: string; appProtocol: string }[];
    };
    const grpc = service.ports.find((p) => p.name === "grpc");
    expect(grpc).toMatchObject({
      port: 8080,
      targetPort: "grpc",
      appProtocol: "kubernetes.io/h2c",
    });
    const podLabels = (
      one(objects, "Deployment").spec as { template: { metadata: { labels: object } } }
    ).template.metadata.labels;
    expect(podLabels).toMatchObject(service.selector);
    const budget = one(objects, "PodDisruptionBudget").spec as {
      selector: { matchLabels: object };
    };
    expect(podLabels).toMatchObject(budget.selector.matchLabels);
    for (const port of service.ports) {
      expect(containerOf(objects).ports.map((p) => p.name)).toContain(port.targetPort);
    }
  });

  test("every setting in the manifests is one the service reads, with a value it accepts", () => {
    const env = environmentOf(objects);
    expect(Object.keys(env)).toEqual(
      expect.arrayContaining(["REDIS_URL", "AUTH_TOKENS", "HOST", "SHUTDOWN_DELAY_MS"]),
    );
    const sources = serverSources();
    expect(Object.keys(env).filter((name) => !serviceReads(sources, name))).toEqual([]);
    // The check finds a misspelt name.
    expect(serviceReads(sources, "REDIS_ULR")).toBe(false);
    const config = configFromEnv(env);
    expect(config.host).toBe("0.0.0.0");
    expect(config.port).toBe(8080);
    expect(config.authTokens?.length).toBeGreaterThan(0);
    const grpc = containerOf(objects).ports.find((p) => p.name === "grpc");
    expect(grpc?.containerPort).toBe(config.port);
    const metrics = containerOf(objects).ports.find((p) => p.name === "metrics");
    expect(metrics?.containerPort).toBe(config.metricsPort);
  });

  test("the kubelet waits out the whole drain: the delay, then the grace for calls in flight", () => {
    const config = configFromEnv(environmentOf(objects));
    expect(config.shutdownDelayMs).toBeGreaterThan(0);
    const graceSeconds = podSpecOf(objects).terminationGracePeriodSeconds;
    expect(graceSeconds * 1000).toBeGreaterThan(
      config.shutdownDelayMs + config.shutdownGraceMs + 1000,
    );
  });

  test("the probes are /livez (startup, liveness) and /readyz (readiness) on the port `grpc`", () => {
    const c = containerOf(objects);
    expect(c.startupProbe.httpGet).toEqual({ path: "/livez", port: "grpc" });
    expect(c.livenessProbe.httpGet).toEqual({ path: "/livez", port: "grpc" });
    expect(c.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "grpc" });
  });
});

test("the base has three replicas of the placeholder image; the overlay its namespace, image and replicas", () => {
  expect((one(base, "Deployment").spec as { replicas: number }).replicas).toBe(3);
  expect(containersOf(one(base, "Deployment")).map((c) => c.image)).toEqual([
    "suggest-task:latest",
  ]);
  expect(base.every((o) => o.metadata.namespace === undefined)).toBe(true);

  expect((one(example, "Deployment").spec as { replicas: number }).replicas).toBe(4);
  expect(containersOf(one(example, "Deployment")).map((c) => c.image)).toEqual([
    "registry.example.com/oda/suggest-task:0.1.0",
  ]);
  expect(one(example, "Namespace").metadata.namespace).toBeUndefined();
  for (const o of example.filter((o) => o.kind !== "Namespace")) {
    expect(o.metadata.namespace, o.kind).toBe("suggest-task");
  }
});

// The service, started with the base's settings (only the addresses are this test's:
// its Redis, free ports), answers the probes where the manifests point them.
let service: (ServiceProcess & { output: () => string }) | undefined;
afterAll(async () => {
  await service?.kill();
});

test("the service started with the manifests' settings answers the probes and /metrics on their ports", async () => {
  const env = environmentOf(base);
  const [port, metricsPort] = [await freePort(), await freePort()];
  service = await spawnService(sharedRedisUrl(), {
    ...env,
    REDIS_URL: sharedRedisUrl(),
    PORT: String(port),
    METRICS_PORT: String(metricsPort),
  });
  const c = containerOf(base);
  for (const probe of [c.startupProbe, c.livenessProbe, c.readinessProbe]) {
    const res = await fetch(`http://127.0.0.1:${port}${probe.httpGet.path}`);
    expect(res.status, probe.httpGet.path).toBe(200);
    expect((await res.text()).trim()).toBe(probe.httpGet.path === "/readyz" ? "ready" : "live");
  }
  // A path the service does not serve is a 404: the probes above answered for real.
  expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(404);
  const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  expect(metrics.status).toBe(200);
  expect(await metrics.text()).toContain("# TYPE suggest_calls_total counter");
  // It listens on every interface, as the Pod's IP needs: the start line names 0.0.0.0.
  expect(service.output()).toContain("0.0.0.0");
});
