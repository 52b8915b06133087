import { execFile } from 'node:child_process';
import { join } from 'node:path';

const SCRIPT = join(import.meta.dirname, 'build-image.sh');

export interface BuiltImages {
  /** docker-archive of the svc image built from the project's Dockerfile (`docker.io/library/svc:test`). */
  svc: string;
  /** docker-archive of the pod sandbox image (`registry.k8s.io/pause:3.10.1`). */
  pause: string;
  /** What the build script reported (the time of each step). */
  log: string;
}

/** The image reference the chart is given (`image.repository`, `image.tag`). */
export const SVC_IMAGE = { repository: 'svc', tag: 'test' };

/**
 * Builds the images with `build-image.sh` (buildah, no Docker; the base image and the layer cache
 * are kept in the cache directory, so an unchanged tree rebuilds in seconds).
 */
export async function buildImages(): Promise<BuiltImages> {
  return await new Promise((resolve, reject) => {
    execFile('bash', [SCRIPT], { maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`build-image.sh failed: ${stderr}`, { cause: err }));
        return;
      }
      const [svc, pause] = stdout.trim().split('\n');
      if (!svc || !pause) {
        reject(new Error(`build-image.sh printed no archives: ${stdout}`));
        return;
      }
      resolve({ svc, pause, log: stderr });
    });
  });
}
