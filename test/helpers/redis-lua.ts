import { after, before } from 'node:test';
import { createClient } from 'redis';
import { startRedisCluster, type RedisCluster } from './redis-cluster.js';

/** A plain redis-server for Lua run directly (EVAL, FCALL) and the client that sends it. */
export interface LuaServer {
  /** The server (its store locations, its node), once `before` has run. */
  readonly server: RedisCluster;
  /** One command, its arguments as given (strings or bytes): Redis's reply. */
  call(...args: (string | Buffer)[]): Promise<unknown>;
}

/**
 * Starts one plain (non-cluster) redis-server and a node-redis client on it in the calling
 * describe block's `before`, and quits and stops both in its `after`: the setup of every test that
 * runs the function library's Lua directly.
 */
export function luaServer(): LuaServer {
  let server: RedisCluster | undefined;
  let client: ReturnType<typeof createClient> | undefined;
  before(async () => {
    server = await startRedisCluster({ cluster: false });
    client = createClient({ socket: { host: '127.0.0.1', port: server.nodes[0]!.port } });
    client.on('error', () => {});
    await client.connect();
  });
  after(async () => {
    await client?.quit().catch(() => undefined);
    await server?.stop();
  });
  return {
    get server(): RedisCluster {
      if (server === undefined) throw new Error('the Lua server is used before its describe block started it');
      return server;
    },
    call: (...args) => {
      if (client === undefined) throw new Error('the Lua server is used before its describe block started it');
      return client.sendCommand(args);
    },
  };
}
