#!/usr/bin/env node
// spbridge's launcher in the npm package `spbridge`: runs the spbridge binary
// of the package for this system (spbridge-<platform>-<arch>, installed by npm
// as an optional dependency), with the same arguments, standard input, output
// and error, and ends as it ends: with its exit code, or by the signal that
// ended it. Signals sent to the launcher are passed on to spbridge.
"use strict";

const { spawn } = require("child_process");
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
  fail(
    "the package " + pkg + ", which holds the binary for this system, is not installed. " +
      "npm installs it with spbridge unless optional dependencies are left out " +
      "(--omit=optional, --no-optional): reinstall spbridge without that.",
  );
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
