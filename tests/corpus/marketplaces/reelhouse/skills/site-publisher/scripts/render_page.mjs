#!/usr/bin/env node
// render_page.mjs <episode.json>: the episode page, from templates/episode.html.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const TEMPLATE = join(dirname(fileURLToPath(import.meta.url)), "..", "templates", "episode.html");
const REQUIRED = ["title", "slug", "video", "captions", "description"];

const escape = (s) =>
  String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

function clock(seconds) {
  const m = Math.floor(seconds / 60);
  return `${m}:${String(Math.floor(seconds % 60)).padStart(2, "0")}`;
}

const [path] = process.argv.slice(2);
if (!path) {
  console.error("usage: render_page.mjs <episode.json>");
  process.exit(2);
}
const episode = JSON.parse(readFileSync(path, "utf8"));
const missing = REQUIRED.filter((k) => !episode[k]);
if (missing.length) {
  console.error(`render_page.mjs: ${path} lacks ${missing.join(", ")}`);
  process.exit(1);
}
const chapters = (episode.chapters ?? [])
  .map((c) => `<a href="#t=${c.at}">${clock(c.at)} ${escape(c.title)}</a>`)
  .join("\n      ");
const html = readFileSync(TEMPLATE, "utf8").replace(/\{\{(\w+)\}\}/g, (_, key) =>
  key === "chapters" ? chapters : escape(episode[key] ?? ""),
);
process.stdout.write(html);
