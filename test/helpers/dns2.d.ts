/** The part of dns2 2.1.0 that test/helpers/dns.ts uses (the package ships no types). */
declare module 'dns2' {
  import type { Socket as UdpSocket, RemoteInfo } from 'node:dgram'
  import type { Server as TcpServer, Socket as TcpSocket } from 'node:net'

  export interface Question { name: string; type: number; class: number }
  export interface Resource { name: string; type: number; class: number; ttl: number; [field: string]: unknown }
  export interface Header { id: number; qr: number; tc: number; rcode: number; aa: number; ra: number; rd: number }
  export class Packet {
    header: Header
    questions: Question[]
    answers: Resource[]
    authorities: Resource[]
    additionals: Resource[]
    toBuffer(): Buffer
    static TYPE: Record<'A' | 'NS' | 'CNAME' | 'SOA' | 'MX' | 'TXT' | 'AAAA', number>
    static CLASS: Record<'IN', number>
    static createResponseFromRequest(request: Packet): Packet
  }
  export type Send = (response: Packet | Buffer) => unknown
  export type Handler = (request: Packet, send: Send, client: RemoteInfo | TcpSocket) => void
  export class UDPServer extends UdpSocket { listen(port?: number, address?: string): Promise<void> }
  export class TCPServer extends TcpServer {}
  export function createUDPServer(handler: Handler): UDPServer
  export function createTCPServer(handler: Handler): TCPServer
}
