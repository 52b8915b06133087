import {
  Agent,
  createServer,
  request,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * The floors bench:frontend and the regression gate measure the frontend against.
 * `lean`: `http.request` with header objects (as a first Node proxy is written); `lean-lists`: the
 * same pipe passing flat `[name, value, …]` header lists both ways, as svc's frontend does, which
 * spares Node's client its header map and a lower-cased copy of every name. `relay`: no HTTP at
 * all, each visitor connection's bytes relayed on a backend connection of its own (what Node's
 * sockets and event loop cost by themselves: the floor under any proxy written in Node).
 */
export type ProxyPath = 'lean' | 'lean-lists' | 'relay';

export interface ProxyPathOptions {
  readonly path: ProxyPath;
  readonly upstream: string;
}

/** Hop-by-hop headers (RFC 9110 §7.6.1) a proxy must not forward. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'];

const HOP_BY_HOP_SET = new Set(HOP_BY_HOP);

/** `rawHeaders` less the hop-by-hop ones (and Host, when `host` replaces it). */
function rawWithoutHopByHop(raw: readonly string[], host?: string): string[] {
  const out = host === undefined ? [] : ['host', host];
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (!HOP_BY_HOP_SET.has(name) && !(host !== undefined && name === 'host'))
      out.push(raw[i] as string, raw[i + 1] as string);
  }
  return out;
}

/** How a bare pipe passes headers on: as objects (`lean`) or as flat lists (`lean-lists`). */
interface HeaderStyle {
  request(req: IncomingMessage, host: string): OutgoingHttpHeaders | string[];
  response(res: IncomingMessage): OutgoingHttpHeaders | string[];
}

const OBJECT_HEADERS: HeaderStyle = {
  request: (req, host) => {
    const headers = withoutHopByHop(req.headers);
    headers.host = host;
    return headers;
  },
  response: (res) => withoutHopByHop(res.headers),
};

const LIST_HEADERS: HeaderStyle = {
  request: (req, host) => rawWithoutHopByHop(req.rawHeaders, host),
  response: (res) => rawWithoutHopByHop(res.rawHeaders),
};

function pipe(req: IncomingMessage, res: ServerResponse, upstream: URL, agent: Agent, style: HeaderStyle): void {
  const upstreamReq = request(
    {
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers: style.request(req, upstream.host),
      agent,
    },
    (upstreamRes) => {
      res.writeHead(upstreamRes.statusCode ?? 502, style.response(upstreamRes));
      upstreamRes.pipe(res);
    },
  );
  upstreamReq.once('error', () => {
    if (!res.headersSent) res.statusCode = 502;
    res.end();
  });
  req.pipe(upstreamReq);
}

function withoutHopByHop(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out = { ...headers };
  for (const name of HOP_BY_HOP) delete out[name];
  return out;
}

/**
 * A reverse proxy on 127.0.0.1 in front of `upstream`: a bare `http.request` pipe over a keep-alive
 * agent, or the byte relay. Run it in its own process (`startModule`).
 */
export async function startProxyPath(options: ProxyPathOptions): Promise<{ url: string; close(): Promise<void> }> {
  const upstream = new URL(options.upstream);
  if (options.path === 'relay') return startByteRelay(upstream);
  const agent = new Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64 });
  const server = createServer((req, res) => {
    pipe(req, res, upstream, agent, options.path === 'lean-lists' ? LIST_HEADERS : OBJECT_HEADERS);
  });
  return listening(server, () => {
    server.closeAllConnections();
    agent.destroy();
  });
}

/**
 * The byte relay: a backend connection per visitor connection, bytes passed both ways as they
 * come (`pipe`, so a slow reader holds the other side back), either side's end or failure closing both.
 */
async function startByteRelay(upstream: URL): Promise<{ url: string; close(): Promise<void> }> {
  const open = new Set<Socket>();
  const server = createTcpServer({ noDelay: true }, (visitor) => {
    const backend = connect({ host: upstream.hostname, port: Number(upstream.port), noDelay: true });
    for (const socket of [visitor, backend]) {
      open.add(socket);
      socket.once('close', () => {
        open.delete(socket);
        visitor.destroy();
        backend.destroy();
      });
      socket.on('error', () => socket.destroy());
    }
    visitor.pipe(backend);
    backend.pipe(visitor);
  });
  return listening(server, () => {
    for (const socket of open) socket.destroy();
  });
}

/** `server` on a free port of 127.0.0.1; closing it stops new connections and `dropConnections` ends the open ones. */
async function listening(
  server: Server,
  dropConnections: () => void,
): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        dropConnections();
      }),
  };
}
