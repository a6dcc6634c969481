-- The library's functions as Redis knows them. A function that never writes is flagged
-- 'no-writes': Redis then runs it on a master out of memory (maxmemory, noeviction), on a replica
-- and during a failover's read-only window. ss_format writes one small key, once per store: it is
-- 'allow-oom', so that a full store still opens. A function that reads the clock is registered
-- `timed` (common.lua): its callers append their clock to the ARGV its own comment lists ('' in
-- production: Redis's TIME).

-- The library's version (VERSION, set by the loader: redis/library.ts), also as the description
-- of ss_version, where FUNCTION LIST shows it without calling anything.
local function ss_version()
  return VERSION
end

local function read_only(name, callback)
  redis.register_function{function_name = name, callback = callback, flags = {'no-writes'}}
end

redis.register_function{
  function_name = 'ss_version', callback = ss_version, flags = {'no-writes'}, description = VERSION,
}
read_only('ss_has', ss_has)
read_only('ss_count', ss_count)
read_only('ss_state', ss_state)
read_only('ss_fq_find', timed(ss_fq_find))
read_only('ss_fq_scan', ss_fq_scan)
read_only('ss_dv_orphaned', timed(ss_dv_orphaned))
read_only('ss_nodes', timed(ss_nodes))
redis.register_function('ss_add', timed(ss_add))
redis.register_function('ss_init', ss_init)
redis.register_function('ss_count_add', timed(ss_count_add))
redis.register_function('ss_count_delete', ss_count_delete)
redis.register_function('ss_alloc', ss_alloc)
redis.register_function('ss_seal', ss_seal)
redis.register_function('ss_create', ss_create)
redis.register_function('ss_create_many', ss_create_many)
redis.register_function('ss_rotate', ss_rotate)
redis.register_function('ss_drop', ss_drop)
redis.register_function('ss_merge', ss_merge)
redis.register_function('ss_plan', ss_plan)
redis.register_function('ss_frontier_configure', ss_frontier_configure)
redis.register_function('ss_frontier_pin', ss_frontier_pin)
redis.register_function('ss_frontier_layout', ss_frontier_layout)
redis.register_function('ss_extend', ss_extend)
redis.register_function('ss_node_beat', timed(ss_node_beat))
redis.register_function{function_name = 'ss_format', callback = ss_format, flags = {'allow-oom'}}
-- The queue functions that read also give ended leases back: they write, like the others.
redis.register_function('ss_fq_ready', timed(ss_fq_ready))
redis.register_function('ss_fq_take', timed(ss_fq_take))
redis.register_function('ss_fq_admit', timed(ss_fq_admit))
redis.register_function('ss_fq_done', timed(ss_fq_done))
redis.register_function('ss_fq_release', timed(ss_fq_release))
redis.register_function('ss_fq_reclaim', timed(ss_fq_reclaim))
redis.register_function('ss_fq_schedule', timed(ss_fq_schedule))
redis.register_function('ss_fq_forget', timed(ss_fq_forget))
redis.register_function('ss_fq_purge', timed(ss_fq_purge))
redis.register_function('ss_fq_set', timed(ss_fq_set))
redis.register_function('ss_fq_queue', timed(ss_fq_queue))
redis.register_function('ss_fq_list', timed(ss_fq_list))
redis.register_function('ss_fq_delete', timed(ss_fq_delete))
redis.register_function('ss_fq_clear', timed(ss_fq_clear))
redis.register_function('ss_fq_stats', timed(ss_fq_stats))
redis.register_function('ss_fq_migrate', timed(ss_fq_migrate))
redis.register_function('ss_dv_change', timed(ss_dv_change))
