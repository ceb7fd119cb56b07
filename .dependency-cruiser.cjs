/**
 * The import rules of server/ (the layers: README.md "Architecture", docs/architecture.md), checked in
 * .ci/run by `npm run check:imports`:
 * - no import cycles, type-only imports counted (tsPreCompilationDeps);
 * - imports run down the layers only: entry → transport → mcp → pipeline → rpc → host →
 *   store → domain → redis → codec; a file may import its own layer and the ones below;
 * - the transport knows nothing of suggestions or Redis, the domain does no I/O;
 * - the SDK and the service share only gen/.
 */
const LAYERS = ["transport", "mcp", "pipeline", "rpc", "host", "store", "domain", "redis", "codec"];

const upward = LAYERS.map((layer, rank) => ({
  name: `no-upward-from-${layer}`,
  comment: `server/${layer}/ may import only its own layer and the ones below it`,
  severity: "error",
  from: { path: `^server/${layer}/` },
  to: {
    path: ["^server/[^/]+\\.ts$", ...LAYERS.slice(0, rank).map((above) => `^server/${above}/`)],
  },
}));

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "no import cycles, type-only imports included",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    ...upward,
    {
      name: "transport-knows-no-suggestions",
      comment:
        "server/transport/ imports nothing of the service's other layers (codec/ is generic)",
      severity: "error",
      from: { path: "^server/transport/" },
      to: { path: "^server/(?!transport/|codec/)" },
    },
    {
      name: "domain-does-no-io",
      comment: "server/domain/ is the reference page as code: no Redis, no network, no files",
      severity: "error",
      from: { path: "^server/domain/" },
      to: {
        path: [
          "^server/(?!domain/|codec/)",
          "^node:(fs|net|http|http2|child_process|tls)",
          "ioredis",
        ],
        dependencyTypesNot: ["type-only"],
      },
    },
    {
      name: "sdk-stands-alone",
      comment: "the SDK builds and packs alone: it shares gen/ with the service, nothing else",
      severity: "error",
      from: { path: "^sdk/src/" },
      to: { path: "^(server|test|bench)/" },
    },
    {
      name: "service-uses-no-sdk-source",
      comment: "the service does not import the SDK's source; both read gen/",
      severity: "error",
      from: { path: "^server/" },
      to: { path: "^sdk/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: ["^gen/", "node_modules", "dist/"] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
  },
};
