/**
 * Downloads over http(s) into a file, bounded: a body past `maxBytes` is cut off and refused, a
 * server that stops answering ends the download after `timeoutMs`. When a sha256 is pinned the
 * file is checked against it before anyone reads it.
 */
import { createHash } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { Readable } from 'node:stream'
import type { ReadableStream as WebReadable } from 'node:stream/web'
import { YokeError } from 'yoke/cli'

export const MAX_DOWNLOAD_BYTES = 200 * 1024 * 1024

export interface Downloaded {
  file: string
  sha256: string
  bytes: number
}

export async function download(
  url: string,
  file: string,
  {
    maxBytes = MAX_DOWNLOAD_BYTES,
    timeoutMs = 120_000,
    sha256,
  }: { maxBytes?: number; timeoutMs?: number; sha256?: string } = {},
): Promise<Downloaded> {
  if (!/^https?:\/\//i.test(url))
    throw new YokeError('INSTALL_FAILED', { reason: `${url}: only http(s) URLs are downloaded` })
  let response: Response
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'follow' })
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message
    throw new YokeError('INSTALL_FAILED', {
      reason: `downloading ${url} failed (${cause}): check the URL and the network`,
    })
  }
  if (!response.ok || !response.body)
    throw new YokeError('INSTALL_FAILED', {
      reason: `downloading ${url} failed: the server answered ${response.status} ${response.statusText}`,
    })
  const declared = Number(response.headers.get('content-length') ?? 0)
  if (declared > maxBytes)
    throw new YokeError('INSTALL_REFUSED', {
      reason: `${url} is ${declared} bytes, over the limit of ${maxBytes}`,
    })
  const hash = createHash('sha256')
  const out = createWriteStream(file, { mode: 0o600 })
  let bytes = 0
  try {
    for await (const chunk of Readable.fromWeb(response.body as WebReadable<Uint8Array>)) {
      bytes += (chunk as Buffer).byteLength
      if (bytes > maxBytes)
        throw new YokeError('INSTALL_REFUSED', {
          reason: `${url} sent more than ${maxBytes} bytes: refused`,
        })
      hash.update(chunk)
      if (!out.write(chunk))
        await new Promise<void>((resolve) => out.once('drain', () => resolve()))
    }
  } finally {
    await new Promise<void>((resolve) => out.end(() => resolve()))
  }
  const digest = hash.digest('hex')
  if (sha256 && digest !== sha256.trim().toLowerCase())
    throw new YokeError('INSTALL_REFUSED', {
      reason: `${url} does not match its pinned sha256: expected ${sha256.trim().toLowerCase()}, got ${digest}`,
    })
  return { file, sha256: digest, bytes }
}
