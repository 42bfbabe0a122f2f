/**
 * The addresses a URL from an untrusted source may not reach: private, loopback, link-local,
 * metadata and other reserved ranges (octos's SSRF rules), IPv4 and IPv6. Apart from the HTTP
 * transports so the importer can use it without loading them.
 */
import { BlockList, isIP } from 'node:net'

const PRIVATE = new BlockList()
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  PRIVATE.addSubnet(net, bits, 'ipv4')
// ::/96 holds ::, ::1 and the IPv4-compatible forms; BlockList maps ::ffff:a.b.c.d onto the IPv4 rules itself
// 64:ff9b::/96 and 64:ff9b:1::/48 (NAT64), 2002::/16 (6to4) and 100::/64 can carry or reach an IPv4 address
for (const [net, bits] of [
  ['::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['2002::', 16],
  ['100::', 64],
] as const) {
  PRIVATE.addSubnet(net, bits, 'ipv6')
}

export function isPrivateAddress(address: string): boolean {
  const family = isIP(address)
  return family === 0 || PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

/** localhost, 127.0.0.0/8 or ::1, as a URL's hostname (IPv6 in brackets or not). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '')
  if (/^localhost\.?$/i.test(host)) return true
  if (isIP(host) === 4) return host.startsWith('127.')
  return host === '::1'
}

/**
 * Why an OAuth server URL (the MCP server's, an authorization URL to open) is refused, or
 * undefined: https only, or plain http to a loopback host when `allowLoopback` says so.
 */
export function insecureOAuthUrl(url: string, allowLoopback: boolean): string | undefined {
  let target: URL
  try {
    target = new URL(url)
  } catch {
    return 'it is not a URL'
  }
  if (target.protocol === 'https:') return undefined
  if (target.protocol === 'http:' && allowLoopback && isLoopbackHost(target.hostname))
    return undefined
  return target.protocol === 'http:'
    ? 'OAuth needs https (the bearer token would travel in cleartext); plain http only for a loopback development server, with oauth.allowLoopback: true'
    : `its scheme ${target.protocol} is not https`
}
