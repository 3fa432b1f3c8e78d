/**
 * The executable's prebuilt dashboard (scripts/build-web.ts writes dist/web/manifest.ts before `bun build
 * --compile`): each path is an embedded file (`with { type: 'file' }`). Absent from the source tree.
 */
declare module '*/dist/web/manifest' {
  interface EmbeddedFile { raw: string; gzip: string; br: string }
  export const manifest: { shell: EmbeddedFile; pages: Array<EmbeddedFile & { area: string }>; files: Array<EmbeddedFile & { name: string; type: string }> }
}
