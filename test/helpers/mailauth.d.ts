import 'mailauth'

/** Fields mailauth 4.13's verifier sets on each signature result that its typings omit. */
declare module 'mailauth' {
  interface DKIMResult {
    /** The signature's c= as written ("relaxed/relaxed"). */
    format?: string
    /** The signature's a= ("rsa-sha256", "ed25519-sha256"). */
    algo?: string
    /** The signature's h= list. */
    signingHeaders?: { keys?: string; headers?: string[] }
  }
}
