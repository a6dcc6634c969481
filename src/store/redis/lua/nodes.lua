-- The serve nodes of the store (redis/nodes.ts): one sorted set, member = a node's address, score
-- = when its entry ends in ms by Redis's clock, so that every node's entry is timed by one clock
-- whatever the skew between the machines that serve.

-- KEYS: nodes. ARGV: address, time to live ms. Registers or refreshes the node, and removes the
-- entries whose time has passed (a node killed without leaving). Replies Redis's time in ms.
local function ss_node_beat(keys, args)
  local now = now_ms()
  redis.call('ZADD', keys[1], now + tonumber(args[2]), args[1])
  redis.call('ZREMRANGEBYSCORE', keys[1], '-inf', now)
  return int(now)
end

-- KEYS: nodes. The addresses whose entries have not ended, in address order.
local function ss_nodes(keys)
  local live = redis.call('ZRANGE', keys[1], '(' .. int(now_ms()), '+inf', 'BYSCORE')
  table.sort(live)
  return live
end
