#!/usr/bin/env node
// spbridge's launcher in the npm package `spbridge`: runs the spbridge binary
// of the package for this system (spbridge-<platform>-<arch>, installed by npm
// as an optional dependency), with the same arguments, standard input, output
// and error, and ends as it ends: with its exit code, or by the signal that
// ended it. Signals sent to the launcher are passed on to spbridge.
"use strict";

const { spawn, spawnSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

// The packages for the systems spbridge is built for; scripts/distpub
// writes the same list into package.json's optionalDependencies.
const packages = {
  "darwin-arm64": "spbridge-darwin-arm64",
  "darwin-x64": "spbridge-darwin-x64",
  "linux-arm64": "spbridge-linux-arm64",
  "linux-x64": "spbridge-linux-x64",
  "win32-x64": "spbridge-win32-x64",
};

function fail(message) {
  process.stderr.write("spbridge: " + message + "\n");
  process.exit(1);
}

const system = process.platform + "-" + process.arch;
const pkg = packages[system];
if (!pkg) {
  fail(
    "no build for " + system + " (there are builds for " +
      Object.keys(packages).join(", ") + "); build it from source with Go: go install ./cmd/spbridge",
  );
}

let binary;
try {
  binary = path.join(
    path.dirname(require.resolve(pkg + "/package.json")),
    "bin",
    process.platform === "win32" ? "spbridge.exe" : "spbridge",
  );
} catch (err) {
  fail(missing(pkg));
}

// missing says that pkg, the package of this system's binary, was not
// found, why if npm's settings say so, and the command that installs it.
function missing(pkg) {
  const version = require("../package.json").version;
  const here = path.resolve(__dirname, "..");
  const at = installedAt(here);
  let text = "the package " + pkg + "@" + version + ", which holds the spbridge binary for " + system +
    ", is not installed (Node looked for it from " + here + ").\n";
  const omit = (process.env.npm_config_omit || "").split(/[\s,]+/);
  if (omit.includes("optional") || process.env.npm_config_optional === "false") {
    text += "npm is set to leave optional dependencies out (omit=optional), and " + pkg +
      " is one: install spbridge again without that setting, or install " + pkg + " itself";
  } else {
    text += "Install it beside spbridge";
  }
  const npm = "npm install " + (at.global ? "-g " + (at.prefix ? "--prefix " + quote(at.prefix) + " " : "") : "");
  const where = at.global ? "" : ", in " + at.project;
  if (/-dev\./.test(version)) {
    // A build of scripts/dist, never published: from its npm/ folder.
    text += ", from the npm/ folder of the scripts/dist output this build came from (DIST)" + where + ":\n  " +
      npm + path.join("DIST", "npm", pkg + "-" + version + ".tgz");
    if (at.global) {
      text += "\nor both packages again: node " + path.join("DIST", "npm", "install.js") +
        (at.prefix ? " --prefix " + quote(at.prefix) : "");
    }
  } else {
    text += where + ":\n  " + npm + pkg + "@" + version;
  }
  return text;
}

// installedAt tells how the package folder dir was installed: into a
// project (its node_modules has .bin/), or with npm install -g, then with
// the prefix when it is not npm's global one.
function installedAt(dir) {
  const modules = path.dirname(dir);
  if (path.basename(modules) !== "node_modules" || fs.existsSync(path.join(modules, ".bin"))) {
    return { global: false, project: path.dirname(modules) };
  }
  // Global: PREFIX/lib/node_modules, or PREFIX/node_modules on Windows.
  let prefix = path.dirname(modules);
  if (process.platform !== "win32" && path.basename(prefix) === "lib") prefix = path.dirname(prefix);
  const r = spawnSync("npm", ["prefix", "-g"], {
    encoding: "utf8",
    shell: process.platform === "win32",
    timeout: 10000,
    windowsHide: true,
  });
  let own = (r.stdout || "").trim();
  try {
    own = fs.realpathSync(own); // as Node gives __dirname
  } catch (_) {
    // npm said nothing usable: name the prefix.
  }
  return { global: true, prefix: own !== "" && path.resolve(own) === prefix ? "" : prefix };
}

function quote(s) {
  return /^[\w@%+=:,.\/\\-]+$/.test(s) ? s : JSON.stringify(s);
}

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit", windowsHide: true });

const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"];
const forward = {};
for (const sig of forwarded) {
  forward[sig] = () => {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        child.kill(sig);
      } catch (_) {
        // Gone already.
      }
    }
  };
  process.on(sig, forward[sig]);
}

child.on("error", (err) => fail("cannot run " + binary + ": " + err.message));

child.on("exit", (code, signal) => {
  for (const sig of forwarded) process.removeListener(sig, forward[sig]);
  if (signal) {
    // End the same way, so whoever started the launcher sees the signal;
    // for one Node ignores (SIGPIPE), exit as a shell would report it.
    process.exitCode = 128 + (os.constants.signals[signal] || 0);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code === null ? 1 : code);
});
