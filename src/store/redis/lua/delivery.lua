-- A scope's undelivered batches (epochs/delivery.ts), in one hash on the scope's slot: field
-- 'b/OWNER/SEQ' holds a batch's lines, 'o/OWNER' when the owner's lease runs out (ms since 1970,
-- the server's clock). A run renews its lease with every write; a run whose lease ran out is gone,
-- and its batches are anyone's to claim.

local function owner_of(field)
  return string.match(field, '^b/(.+)/%d+$')
end

-- KEYS: the hash. ARGV: owner ('' for none), lease ms, n, the n fields that must be there and
-- go, m, the m fields that go when there, then pairs of field and value to store. Renews the
-- owner's lease. Returns 0, changing nothing, when one of the n fields is not there; else 1.
local function ss_dv_change(keys, args)
  local n = tonumber(args[3])
  for i = 4, 3 + n do
    if redis.call('HEXISTS', keys[1], args[i]) == 0 then return 0 end
  end
  local m = tonumber(args[4 + n])
  local gone = {}
  for i = 4, 3 + n do gone[#gone + 1] = args[i] end
  for i = 5 + n, 4 + n + m do gone[#gone + 1] = args[i] end
  if #gone > 0 then redis.call('HDEL', keys[1], unpack(gone)) end
  local put = {}
  for i = 5 + n + m, #args do put[#put + 1] = args[i] end
  if args[1] ~= '' then
    put[#put + 1] = 'o/' .. args[1]
    put[#put + 1] = int(now_ms() + tonumber(args[2]))
  end
  if #put > 0 then redis.call('HSET', keys[1], unpack(put)) end
  return 1
end

-- KEYS: the hash. Returns field, lines, ... of the batches whose owner's lease ran out (or who has
-- none), oldest owners' first as HGETALL gives them (the caller sorts).
local function ss_dv_orphaned(keys)
  local all = redis.call('HGETALL', keys[1])
  local now = now_ms()
  local leases = {}
  for i = 1, #all, 2 do
    local owner = string.match(all[i], '^o/(.+)$')
    if owner then leases[owner] = tonumber(all[i + 1]) end
  end
  local out = {}
  for i = 1, #all, 2 do
    local owner = owner_of(all[i])
    if owner and (leases[owner] == nil or leases[owner] <= now) then
      out[#out + 1] = all[i]
      out[#out + 1] = all[i + 1]
    end
  end
  return out
end
