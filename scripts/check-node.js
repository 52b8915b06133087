// The project runs on the Node.js LTS it brings as a devDependency (package "node"); npm scripts put
// it first on PATH. This check fails fast with a clear message when an older Node slipped in.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(
    `svc needs Node.js >= 22.18 (24 LTS preferred); this is ${process.version}. Run through npm scripts (npm start, npm test), which use the Node from devDependencies.`,
  );
  process.exit(1);
}
