-- Queuing a batch's new URLs into the frontier (docs/frontier.md "On Redis"). A partition's
-- stream holds one entry per queued URL: v (ENTRY_VERSION), u (the URL), e (the epoch it was found
-- new in), d (its data as JSON, when it has some), a (the attempts it had before a release with
-- data queued it again). The consumer group GROUP delivers each entry once (XREADGROUP '>'); a
-- delivered entry stays pending until done.

local GROUP = 'ss'
local ENTRY_VERSION = '1'

-- Queue items (encodeQueueItems in redis/frontier.ts): per URL of the batch, a u32 little-endian
-- byte length and the URL, a u32 length and the data (0: none). Decoded before anything is
-- written; nil when the blob does not hold exactly n items.
local function queue_items(blob, n)
  local items, at = {}, 1
  for i = 1, n do
    if at + 3 > #blob then return nil end
    local url_bytes = u32(blob, at)
    local url = string.sub(blob, at + 4, at + 3 + url_bytes)
    at = at + 4 + url_bytes
    if at + 3 > #blob then return nil end
    local data_bytes = u32(blob, at)
    local data = string.sub(blob, at + 4, at + 3 + data_bytes)
    at = at + 4 + data_bytes
    items[i] = {url, data}
  end
  if at ~= #blob + 1 then return nil end
  return items
end

-- Appends the items whose flag is '1' (found new by this batch) to the stream, in batch order;
-- creates the stream and its group with the first.
local function queue_new(stream, flags, items, epoch)
  local ready = false
  for i = 1, #items do
    if flags[i] == '1' then
      if not ready and redis.call('EXISTS', stream) == 0 then
        redis.call('XGROUP', 'CREATE', stream, GROUP, '0', 'MKSTREAM')
      end
      ready = true
      local url, data = items[i][1], items[i][2]
      if data == '' then
        redis.call('XADD', stream, '*', 'v', ENTRY_VERSION, 'u', url, 'e', epoch)
      else
        redis.call('XADD', stream, '*', 'v', ENTRY_VERSION, 'u', url, 'e', epoch, 'd', data)
      end
    end
  end
end
