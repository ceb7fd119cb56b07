import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { RedisServerProcess } from "../../server/redis/redis-server-process.js";
import {
  connectErrorOf,
  eventually,
  grpcClients,
  ownRedis,
  putSession,
  redisClient,
  type ServiceProcess,
  spawnService,
  uniqueId,
} from "../support/harness.js";
import { readYamlDocuments } from "../support/kustomize.js";
import {
  type PrometheusProcess,
  promtool,
  requireBinary,
  startPrometheus,
} from "../support/prometheus.js";
import { exposition, groupingLabelsIn, metricNamesIn } from "../support/promql-names.js";
import { offerOne } from "../support/suggest.js";

// The deployment's rule files and dashboard, checked by Prometheus itself: promtool's
// checks and unit tests, then a real Prometheus that scrapes a service under a small
// load and parses every expression, each of which may name only series the service
// exports (or a recording rule's output). Nothing is skipped: without promtool and
// prometheus this file fails, saying which Debian package to install.

const DIR = "deploy/prometheus";
const RULE_FILES = ["recording.yaml", "alerts.yaml"].map((f) => resolve(DIR, f));
const JOB = "suggest-task";

interface Rule {
  record?: string;
  alert?: string;
  expr: string;
}
const rules = RULE_FILES.flatMap((file) =>
  (readYamlDocuments(file)[0] as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules),
);
const recorded = new Set(rules.flatMap((r) => (r.record === undefined ? [] : [r.record])));

/** Each panel target's expression, with Grafana's variables as a query would have them. */
function dashboardExpressions(): { title: string; expr: string }[] {
  const dashboard = JSON.parse(readFileSync("deploy/grafana/suggest-task.json", "utf8")) as {
    panels: { title: string; targets?: { expr: string }[] }[];
  };
  return dashboard.panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({
      title: p.title,
      expr: t.expr.replaceAll('"$job"', '".+"').replaceAll("$__rate_interval", "1m"),
    })),
  );
}

const expressions = [
  ...rules.map((r) => ({ title: r.record ?? (r.alert as string), expr: r.expr })),
  ...dashboardExpressions(),
];

let redisServer: (RedisServerProcess & { remove: () => void }) | undefined;
let service: ServiceProcess | undefined;
let prometheus: PrometheusProcess | undefined;
beforeAll(async () => {
  requireBinary("promtool");
  requireBinary("prometheus");
  redisServer = await ownRedis();
  service = await spawnService(redisServer.url);
  prometheus = await startPrometheus({
    job: JOB,
    targets: [new URL(service.url).host],
    rules: RULE_FILES,
  });
});
afterAll(async () => {
  await prometheus?.stop();
  await service?.kill();
  await redisServer?.stop();
  redisServer?.remove();
});

test("promtool checks the rule files and passes their unit tests", () => {
  const check = promtool(["check", "rules", ...RULE_FILES]);
  // One line for each file: the recording rules, then the alerts.
  expect(check.output).toContain(`SUCCESS: ${recorded.size} rules found`);
  expect(check.output).toContain(`SUCCESS: ${rules.length - recorded.size} rules found`);
  expect(check.status, check.output).toBe(0);
  const tests = readdirSync(DIR).filter((f) => f.includes("test") && f.endsWith(".yaml"));
  expect(tests.length).toBeGreaterThan(0);
  const run = promtool(["test", "rules", ...tests.map((f) => resolve(DIR, f))]);
  expect(run.status, run.output).toBe(0);
  expect(run.output).toContain("SUCCESS");
});

test("the alerts a team needs on day one are there", () => {
  expect(rules.flatMap((r) => (r.alert === undefined ? [] : [r.alert])).sort()).toEqual([
    "SuggestTaskErrorRatioHigh",
    "SuggestTaskLatencyHigh",
    "SuggestTaskNotReady",
    "SuggestTaskReadinessFlapping",
    "SuggestTaskRedisErrors",
    "SuggestTaskReplicaWaitsFailing",
    "SuggestTaskStartLocksTakenOver",
    "SuggestTaskStoreRefusingWrites",
    "SuggestTaskStoreUnavailable",
  ]);
});

test("every rule and panel parses in Prometheus and names only series the service exports", async () => {
  const p = prometheus as PrometheusProcess;
  const clients = grpcClients((service as ServiceProcess).url);
  // A small load: offers, a refusal, lists, a Start and a watch that sees one list.
  const sessionId = uniqueId();
  await putSession(clients, { sessionId });
  const offers = [await offerOne(clients, sessionId), await offerOne(clients, sessionId)];
  await clients.suggestions.listSuggestions({ sessionId }).catch(() => undefined);
  await clients.suggestions.listSuggestions({ sessionId });
  await clients.suggestions.suggestTask({ context: { sessionId: "" } }).catch(() => undefined);
  await clients.suggestions.startSuggestion({ sessionId, suggestionId: offers[0]?.id as string });
  const watching = new AbortController();
  for await (const _ of clients.suggestions.watchSuggestions(
    { sessionId },
    { signal: watching.signal },
  )) {
    break;
  }
  watching.abort();
  // Redis out of memory, twice (two scrapes apart, so that the new series increases):
  // writes are refused and counted by kind, and the alert on refused writes fires.
  const redis = redisClient((redisServer as RedisServerProcess).url);
  await redis.config("SET", "maxmemory", "1");
  for (const refused of [1, 2]) {
    const err = await connectErrorOf(offerOne(clients, sessionId));
    expect(err.rawMessage).toBe("the suggestion store is out of memory");
    await eventually(async () => {
      const answer = await p.api("query", {
        query: `suggest_store_refusals_total{job="${JOB}",kind="out-of-memory"}`,
      });
      const [series] = (answer.data as { result: { value: [number, string] }[] }).result;
      return series?.value[1] === String(refused);
    }, 20_000);
  }
  await redis.config("SET", "maxmemory", "0");
  redis.disconnect();

  const text = await (await fetch(`${(service as ServiceProcess).url}/metrics`)).text();
  const exported = exposition(text);
  // Prometheus has scraped the calls made: the dashboard's first panel has every RPC called.
  const until = Date.now() + 20_000;
  let methods: string[] = [];
  while (Date.now() < until) {
    const answer = await p.api("query", {
      query: `sum by (method) (increase(suggest_calls_total{job="${JOB}"}[1m]))`,
    });
    methods = ((answer.data as { result: { metric: { method: string } }[] }).result ?? []).map(
      (r) => r.metric.method,
    );
    if (methods.length >= 4) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  expect(methods).toEqual(
    expect.arrayContaining([
      "/oda.suggest.v1.SuggestionService/SuggestTask",
      "/oda.suggest.v1.SuggestionService/ListSuggestions",
      "/oda.suggest.v1.SuggestionService/StartSuggestion",
      "/oda.suggest.v1.SuggestionService/WatchSuggestions",
    ]),
  );

  const problems: string[] = [];
  for (const { title, expr } of expressions) {
    const answer = await p.api("query", { query: expr });
    if (answer.status !== "success") problems.push(`${title}: ${answer.error} (${expr})`);
    if (expr.includes("$")) problems.push(`${title}: a variable left in ${expr}`);
    for (const name of metricNamesIn(expr)) {
      if (!exported.names.has(name) && !recorded.has(name)) {
        problems.push(`${title}: ${name} is not on the service's /metrics`);
      }
    }
    for (const label of groupingLabelsIn(expr)) {
      if (!exported.labels.has(label) && label !== "job" && label !== "instance") {
        problems.push(`${title}: label ${label} is on no series of /metrics`);
      }
    }
  }
  expect(problems).toEqual([]);

  // The series the dashboard is about are all there.
  const named = new Set(expressions.flatMap((e) => metricNamesIn(e.expr)));
  for (const name of [
    "suggest_calls_total",
    "suggest_call_duration_seconds_bucket",
    "suggest_watchers",
    "suggest_ready",
    "suggest_redis_errors_total",
    "suggest_store_refusals_total",
    "suggest_start_lock_lapses_total",
  ]) {
    expect(named, name).toContain(name);
  }
  // The checks above catch what they are meant to: a parse error, an unknown name.
  expect((await p.api("query", { query: "sum(rate(suggest_calls_total[5m])" })).status).toBe(
    "error",
  );
  expect(metricNamesIn('sum by (code) (rate(suggest_callz_total{code!="ok"}[5m])) > 0.5')).toEqual([
    "suggest_callz_total",
  ]);

  // Every rule is loaded, and only the alert on refused writes fires.
  const loaded = await p.api("rules");
  const names = (
    loaded.data as { groups: { rules: { name: string; health: string }[] }[] }
  ).groups.flatMap((g) => g.rules);
  expect(names.map((r) => r.name).sort()).toEqual(rules.map((r) => r.record ?? r.alert).sort());
  expect(names.filter((r) => r.health === "err")).toEqual([]);
  const ready = await p.api("query", { query: `sum(suggest_ready{job="${JOB}"})` });
  expect((ready.data as { result: { value: [number, string] }[] }).result[0]?.value[1]).toBe("1");
  let alerts: { metric: Record<string, string> }[] = [];
  await eventually(async () => {
    alerts = ((await p.api("query", { query: "ALERTS" })).data as { result: typeof alerts }).result;
    return alerts.length > 0;
  }, 20_000);
  expect(alerts.map((a) => a.metric)).toEqual([
    {
      __name__: "ALERTS",
      alertname: "SuggestTaskStoreRefusingWrites",
      alertstate: "firing",
      job: JOB,
      kind: "out-of-memory",
      severity: "page",
    },
  ]);
});
