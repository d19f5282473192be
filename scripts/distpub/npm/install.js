#!/usr/bin/env node
// Installs spbridge from the npm packages beside this file, as scripts/dist
// wrote them, before they are published: the launcher (spbridge-VERSION.tgz)
// and the package of this system's binary (spbridge-OS-CPU-VERSION.tgz)
// only, since npm refuses to install another system's package.
//
//   node install.js [--dry-run] [--os OS --cpu CPU] [NPM-FLAGS...]
//
// It runs `npm install -g --offline LAUNCHER PACKAGE NPM-FLAGS...`
// (e.g. --prefix DIR), having printed it; --dry-run only prints it. With
// --dry-run, --os and --cpu print the command for another system, in Node's
// names (linux, darwin, win32; x64, arm64).
"use strict";

const { spawnSync } = require("child_process");
const fs = require("fs");
const path = require("path");

// The version of the packages; scripts/distpub writes it in.
const version = "@VERSION@";

function fail(message) {
  process.stderr.write("install.js: " + message + "\n");
  process.exit(1);
}

let os = process.platform;
let cpu = process.arch;
let dryRun = false;
const npmFlags = [];
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  if (arg === "--dry-run") {
    dryRun = true;
  } else if (arg === "--os" || arg === "--cpu") {
    const value = args[++i];
    if (!value) fail(arg + " needs a value");
    if (arg === "--os") os = value;
    else cpu = value;
  } else if (arg === "-h" || arg === "--help") {
    process.stdout.write(
      "Usage: node install.js [--dry-run] [--os OS --cpu CPU] [NPM-FLAGS...]\n" +
        "Installs spbridge " + version + " with npm install -g from the packages beside this file:\n" +
        "the launcher and this system's package only. --dry-run prints the npm command\n" +
        "(with --os and --cpu, another system's).\n",
    );
    process.exit(0);
  } else {
    npmFlags.push(arg);
  }
}

if (!dryRun && (os !== process.platform || cpu !== process.arch)) {
  fail("npm installs only this system's package (" + process.platform + "-" + process.arch + "): --os and --cpu go with --dry-run");
}

const dir = __dirname;
const launcher = path.join(dir, "spbridge-" + version + ".tgz");
const platform = path.join(dir, "spbridge-" + os + "-" + cpu + "-" + version + ".tgz");
if (!fs.existsSync(launcher)) fail("no " + launcher + ": run scripts/dist again");
if (!fs.existsSync(platform)) {
  const here = fs
    .readdirSync(dir)
    .filter((f) => f.startsWith("spbridge-") && f.endsWith("-" + version + ".tgz") && f !== path.basename(launcher))
    .map((f) => f.slice("spbridge-".length, -("-" + version + ".tgz").length));
  const goos = { win32: "windows" }[os] || os;
  const goarch = { x64: "amd64" }[cpu] || cpu;
  fail(
    "no package for " + os + "-" + cpu + " here (" + path.basename(platform) + "; this build holds " +
      (here.length ? here.join(", ") : "none") + "): build it with bash scripts/dist --targets " +
      goos + "/" + goarch + " (or the default, every system)",
  );
}

const npmArgs = ["install", "-g", "--offline", launcher, platform, ...npmFlags];
const quote = (s) => (/^[\w@%+=:,./-]+$/.test(s) ? s : JSON.stringify(s));
process.stdout.write("npm " + npmArgs.map(quote).join(" ") + "\n");
if (dryRun) process.exit(0);

// npm is a batch file on Windows, which only a shell runs.
const win = process.platform === "win32";
const result = spawnSync("npm", win ? npmArgs.map((a) => '"' + a + '"') : npmArgs, {
  stdio: "inherit",
  shell: win,
});
if (result.error) fail("cannot run npm: " + result.error.message);
process.exit(result.status === null ? 1 : result.status);
