/**
 * Child process of bench/campaign.ts: RSA-2048 signatures alone (crypto sign() over a DKIM-sized header
 * block), back to back for BENCH_SIGN_SECONDS (default 3), on one thread. Prints {"signatures", "seconds"}.
 * Several run at once (one per core) give the signing ceiling of the machine at that moment.
 */
import { generateKeyPairSync, sign } from 'node:crypto'

const seconds = Number(process.env.BENCH_SIGN_SECONDS ?? 3)
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
const block = Buffer.from(`${'from:Bench <hello@bench-sender.test>\r\nto:user1@sink.test\r\nsubject:Hello User 1\r\n'.repeat(4)}dkim-signature:v=1; a=rsa-sha256; c=relaxed/relaxed; d=bench-sender.test; s=s1; bh=x; h=from:to:subject; b=`)
for (let i = 0; i < 20; i++) sign('sha256', block, privateKey)
let n = 0
const t0 = performance.now()
const end = t0 + seconds * 1000
while (performance.now() < end) {
  for (let i = 0; i < 20; i++) sign('sha256', block, privateKey)
  n += 20
}
console.log(JSON.stringify({ signatures: n, seconds: (performance.now() - t0) / 1000 }))
