/**
 * A minimal SMTP sink for benchmarks (the tests use real smtp-server sinks, test/helpers/smtp.ts): it
 * speaks just enough ESMTP (EHLO with PIPELINING, MAIL, RCPT, DATA, RSET, NOOP, QUIT), accepts every
 * message and counts them, so that the receiving side costs little of the machine being measured.
 * Prints {"port"} once, {"received": 1, "firstAt": epoch ms} when the first message arrives, then
 * {"received": n} whenever the count changes (every 50 ms at most).
 *
 *   bun bench/_sink.ts          SINK_PORT=0 (default: a free port)
 */
interface State { data: boolean; buf: string; tail: string }

let received = 0
const server = Bun.listen<State>({
  hostname: '127.0.0.1',
  port: Number(process.env.SINK_PORT ?? 0),
  socket: {
    open(s) {
      s.data = { data: false, buf: '', tail: '' }
      s.write('220 sink.bench ESMTP\r\n')
    },
    data(s, chunk) {
      const st = s.data
      let text = chunk.toString('latin1')
      let out = ''
      while (text.length) {
        if (st.data) {
          // Look for the end of DATA across chunk boundaries, keeping only a short tail.
          const scan = st.tail + text
          const end = scan.indexOf('\r\n.\r\n')
          if (end < 0) {
            st.tail = scan.slice(-4)
            text = ''
            break
          }
          const consumed = end + 5 - st.tail.length
          text = text.slice(consumed)
          st.tail = ''
          st.data = false
          received++
          // The first message is reported at once, with the time it arrived (time-to-first-message figures).
          if (received === 1) process.stdout.write(`${JSON.stringify({ received, firstAt: Date.now() })}\n`)
          out += '250 2.0.0 OK queued\r\n'
          continue
        }
        st.buf += text
        text = ''
        while (!st.data) {
          const nl = st.buf.indexOf('\r\n')
          if (nl < 0) break
          const line = st.buf.slice(0, nl)
          st.buf = st.buf.slice(nl + 2)
          const cmd = line.slice(0, 4).toUpperCase()
          if (cmd === 'EHLO') out += '250-sink.bench\r\n250-PIPELINING\r\n250-8BITMIME\r\n250 SIZE 104857600\r\n'
          else if (cmd === 'DATA') {
            out += '354 go ahead\r\n'
            st.data = true
            // The rest of the buffer is message data.
            text = st.buf
            st.buf = ''
            st.tail = '\r\n' // DATA content starts at a line beginning: "." alone ends an empty message
          } else if (cmd === 'QUIT') { out += '221 bye\r\n'; s.write(out); s.end(); return }
          else out += '250 OK\r\n'
        }
      }
      if (out) s.write(out)
    },
  },
})

process.stdout.write(`${JSON.stringify({ port: server.port })}\n`)
let last = -1
setInterval(() => {
  if (received !== last) {
    last = received
    process.stdout.write(`${JSON.stringify({ received })}\n`)
  }
}, 50)
