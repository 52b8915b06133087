import { isIP } from 'node:net';
import { join, type ConfigReader } from '../lib/config-reader.ts';
import type { ListenAddress } from '../lib/listen.ts';
import { DEFAULT_INSPECTOR_LIMITS, type InspectorLimits } from '../agent/inspector/store.ts';

/** The agent's page and its request inspector (serve config `ui`; docs/agent.md, "The agent's page"). */
export interface UiConfig {
  /** false: no page (`ui.enabled: false`). */
  readonly enabled: boolean;
  readonly listen: ListenAddress;
  /** Whether `listen` was the default, which gives way to a free port when taken. */
  readonly defaultListen: boolean;
  /** Undefined: the inspector is off (`ui.inspector.enabled: false`). */
  readonly inspector?: InspectorLimits;
}

export const DEFAULT_UI_LISTEN: ListenAddress = { host: '127.0.0.1', port: 4040 };
const UI_KEYS = ['enabled', 'listen', 'inspector'];
const INSPECTOR_KEYS = ['enabled', 'requests', 'body_bytes', 'memory_bytes'];

/** Reads the `ui` section (absent: every default), recording each problem with its field path. */
export function readUiSection(r: ConfigReader, value: unknown): UiConfig {
  const ui = value === undefined ? {} : (r.object(value, 'ui') ?? {});
  r.unknownKeys(ui, 'ui', UI_KEYS);
  const enabled = r.boolean(ui, 'enabled', 'ui', { required: false }) ?? true;
  const listen = ui.listen === undefined ? undefined : r.bindAddress(ui, 'listen', 'ui');
  if (listen && !isLoopback(listen.host))
    r.problem(
      'ui.listen',
      `must be a loopback address (127.0.0.1 or ::1): the page controls this machine's shares, got ${JSON.stringify(listen.host)}`,
    );
  const section = ui.inspector === undefined ? {} : (r.object(ui.inspector, 'ui.inspector') ?? {});
  r.unknownKeys(section, 'ui.inspector', INSPECTOR_KEYS);
  const on = r.boolean(section, 'enabled', 'ui.inspector', { required: false }) ?? true;
  const limits: InspectorLimits = {
    requests: count(r, section, 'requests', DEFAULT_INSPECTOR_LIMITS.requests, 10_000),
    bodyBytes: count(r, section, 'body_bytes', DEFAULT_INSPECTOR_LIMITS.bodyBytes, 16 * 1024 * 1024),
    memoryBytes: count(r, section, 'memory_bytes', DEFAULT_INSPECTOR_LIMITS.memoryBytes, 1024 * 1024 * 1024),
  };
  return {
    enabled,
    listen: listen ?? DEFAULT_UI_LISTEN,
    defaultListen: listen === undefined,
    ...(on ? { inspector: limits } : {}),
  };
}

/** A whole number from 1 to `max`, or the default when absent. */
function count(r: ConfigReader, obj: Record<string, unknown>, key: string, fallback: number, max: number): number {
  const value = obj[key];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    r.problem(join('ui.inspector', key), `must be a whole number from 1 to ${max}, got ${JSON.stringify(value)}`);
    return fallback;
  }
  return value;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}
