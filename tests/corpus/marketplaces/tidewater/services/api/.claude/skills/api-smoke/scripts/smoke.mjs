#!/usr/bin/env node
// Smoke-test the routes of routes.json against a base URL.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { timedFetch } from "./lib/http.mjs";

const { values } = parseArgs({
  options: {
    routes: { type: "string", default: "routes.json" },
    "base-url": { type: "string" },
    "budget-ms": { type: "string", default: "500" },
    "dry-run": { type: "boolean", default: false },
  },
});

const routes = JSON.parse(readFileSync(values.routes, "utf8"));
if (values["dry-run"]) {
  for (const r of routes) console.log(`${r.method} ${r.path} -> ${r.expect}${r.auth ? " (auth)" : ""}`);
  process.exit(0);
}
const base = values["base-url"] ?? process.env.API_BASE_URL;
if (!base) {
  console.error("smoke: pass --base-url or set API_BASE_URL");
  process.exit(2);
}
const budget = Number(values["budget-ms"]);
const failed = [];
for (const r of routes) {
  try {
    const { status, ms } = await timedFetch(new URL(r.path, base), {
      method: r.method, token: r.auth ? process.env.API_TOKEN : undefined });
    const ok = status === r.expect && ms <= budget;
    console.log(`${ok ? "ok  " : "FAIL"} ${r.method} ${r.path} ${status} ${ms}ms`);
    if (!ok) failed.push(r.path);
  } catch (err) {
    console.error(`smoke: cannot reach ${base}: ${err.cause?.code ?? err.message}`);
    process.exit(3);
  }
}
if (failed.length) { console.log(`failed: ${failed.join(", ")}`); process.exit(1); }
