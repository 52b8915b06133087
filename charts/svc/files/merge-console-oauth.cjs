// Run by the controller's console-oauth init container (node -e, cwd /app): argv is the base
// config, the Secret's console-oauth.yaml and the output. Problems name the file, never its content.
const fs = require('node:fs');
const YAML = require('yaml');
const [, base, oauthFile, out] = process.argv;
const fail = (message) => {
  console.error(message);
  process.exit(1);
};
const read = (file) => {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    fail(`${file}: cannot read (${err.code})`);
  }
  try {
    return YAML.parse(text);
  } catch (err) {
    fail(`${file}: not valid YAML (${err.code}${err.linePos ? ` at line ${err.linePos[0].line}` : ''})`);
  }
};
const isMapping = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const config = read(base);
const oauth = read(oauthFile);
if (!isMapping(config)) fail(`${base}: not a mapping`);
if (!isMapping(oauth)) fail(`${oauthFile}: must be the console.oauth mapping (providers, signing_key, encryption_key)`);
config.console = { ...config.console, oauth };
fs.writeFileSync(out, YAML.stringify(config), { mode: 0o600 });
