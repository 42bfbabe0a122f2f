/**
 * The Redis engine's Lua scripts: each operation that reads and then writes is one script, so it
 * is atomic on the server whatever the replicas do at once (compare-and-set, claim-once, merged
 * counters, the rate window). ioredis runs them by EVALSHA and sends the source again when a
 * restarted Redis no longer has it (NOSCRIPT).
 *
 * A record is a hash: `v` its version, `d` its JSON text.
 */

/** KEYS[1] → {version, text, pttl} or nil */
const get = `
local r = redis.call('HMGET', KEYS[1], 'v', 'd')
if not r[1] then return false end
return {r[1], r[2], redis.call('PTTL', KEYS[1])}
`

/**
 * KEYS[1]; ARGV: mode (any | absent | version), expected version, new version, text, ttl ms (0:
 * none) → {1, version} written, or {0[, version, text, pttl]} refused (with what is there)
 */
const put = `
local r = redis.call('HMGET', KEYS[1], 'v', 'd')
local mode = ARGV[1]
if (mode == 'absent' and r[1]) or (mode == 'version' and r[1] ~= ARGV[2]) then
  if r[1] then return {0, r[1], r[2], redis.call('PTTL', KEYS[1])} end
  return {0}
end
redis.call('HSET', KEYS[1], 'v', ARGV[3], 'd', ARGV[4])
local ttl = tonumber(ARGV[5])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) else redis.call('PERSIST', KEYS[1]) end
return {1, ARGV[3]}
`

/** KEYS[1]; ARGV[1]: the expected version or '' → {version, text} removed, or nil */
const take = `
local r = redis.call('HMGET', KEYS[1], 'v', 'd')
if not r[1] or (ARGV[1] ~= '' and r[1] ~= ARGV[1]) then return false end
redis.call('DEL', KEYS[1])
return {r[1], r[2]}
`

/** KEYS[1]; ARGV: ttl ms (0: keep), then field, delta pairs → the fields' new values (text) */
const add = `
local out = {}
for i = 2, #ARGV, 2 do
  out[#out + 1] = redis.call('HINCRBYFLOAT', KEYS[1], ARGV[i], ARGV[i + 1])
end
local ttl = tonumber(ARGV[1])
if ttl > 0 and #ARGV > 1 then redis.call('PEXPIRE', KEYS[1], ttl) end
return out
`

/**
 * A fixed window that starts at its first hit. KEYS[1]; ARGV: max, window ms, cost →
 * {allowed 0|1, count, ms until it resets}; a refused hit is not counted.
 */
const hit = `
local max, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
local ttl = redis.call('PTTL', KEYS[1])
if count + cost > max then
  if ttl == -1 then redis.call('PEXPIRE', KEYS[1], window); ttl = window end
  if ttl < 0 then ttl = 0 end
  return {0, count, ttl}
end
count = redis.call('INCRBY', KEYS[1], cost)
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], window); ttl = window end
return {1, count, ttl}
`

export const scripts = {
  yokeGet: { numberOfKeys: 1, lua: get },
  yokePut: { numberOfKeys: 1, lua: put },
  yokeTake: { numberOfKeys: 1, lua: take },
  yokeAdd: { numberOfKeys: 1, lua: add },
  yokeHit: { numberOfKeys: 1, lua: hit },
}

/** The scripts as commands on a client (ioredis `scripts` option). */
export interface ScriptCommands {
  yokeGet(key: string): Promise<[string, string, number] | null>
  yokePut(
    key: string,
    mode: string,
    expected: string,
    version: string,
    text: string,
    ttl: number,
  ): Promise<[1, string] | [0, string?, string?, number?]>
  yokeTake(key: string, expected: string): Promise<[string, string] | null>
  yokeAdd(key: string, ttl: number, ...pairs: Array<string | number>): Promise<string[]>
  yokeHit(
    key: string,
    max: number,
    windowMs: number,
    cost: number,
  ): Promise<[0 | 1, number, number]>
}
