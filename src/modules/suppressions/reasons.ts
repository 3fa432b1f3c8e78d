/**
 * Why an address is suppressed. Its own module, free of Elysia and TypeBox, so that the CLI can name the
 * reasons in its help without loading them (model.ts re-exports it).
 */
export const SUPPRESSION_REASONS = ['bounce', 'complaint', 'manual'] as const
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number]
