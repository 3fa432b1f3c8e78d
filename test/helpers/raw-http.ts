/** For framing tests: an HTTP/1.1 server on 127.0.0.1 written on a raw TCP socket, so nothing normalises what arrives. */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net'

/** A raw HTTP/1.1 server: records each request's head and body bytes and the connection it came on. */
export interface RawRequest { socket: number; head: string; body: string; headers: Array<[string, string]> }
export function rawServer(): { server: Server; port: () => number; requests: RawRequest[]; sockets: Socket[] } {
  const requests: RawRequest[] = []
  const sockets: Socket[] = []
  const server = createServer((socket) => {
    const id = sockets.push(socket)
    let buf: Buffer = Buffer.alloc(0)
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d])
      for (;;) {
        const end = buf.indexOf('\r\n\r\n')
        if (end < 0) return
        const head = buf.subarray(0, end).toString('latin1')
        const headers = head.split('\r\n').slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as [string, string])
        const length = headers.find(([k]) => k === 'content-length')
        const chunked = headers.some(([k, v]) => k === 'transfer-encoding' && /chunked/i.test(v))
        let body = ''
        let rest: Buffer
        if (chunked) {
          // Framing the test refuses anyway; read it so the request is recorded.
          const zero = buf.indexOf('\r\n0\r\n\r\n', end)
          if (zero < 0) return
          body = buf.subarray(end + 4, zero + 2).toString('latin1')
          rest = buf.subarray(zero + 7)
        } else {
          const n = length ? Number(length[1]) : 0
          if (buf.length < end + 4 + n) return
          body = buf.subarray(end + 4, end + 4 + n).toString('latin1')
          rest = buf.subarray(end + 4 + n)
        }
        requests.push({ socket: id, head, body, headers })
        buf = rest
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok')
      }
    })
  })
  server.listen(0, '127.0.0.1')
  return { server, port: () => (server.address() as AddressInfo).port, requests, sockets }
}

