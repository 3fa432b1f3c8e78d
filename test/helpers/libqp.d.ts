/** The quoted-printable decoder the MIME tests check the encoder against (libqp ships no types). */
declare module 'libqp' {
  export function decode(str: string): Buffer
  export function encode(buffer: Buffer | string): string
}
