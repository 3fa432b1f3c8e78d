import { t, type Static } from 'elysia'

export const NotificationResult = t.Object({
  type: t.String({ description: 'SNS message type: Notification, SubscriptionConfirmation, UnsubscribeConfirmation' }),
  messageId: t.String({ description: 'SNS MessageId' }),
  topicArn: t.String(),
  confirmed: t.Boolean({ description: 'True when a subscription was confirmed' }),
  kind: t.Union([t.String(), t.Null()], { description: 'SES notification type (Bounce, Complaint, Delivery...)' }),
  applied: t.Integer({ description: 'Emails whose state the notification changed' }),
  duplicate: t.Boolean({ description: 'True for a redelivery of a notification already received (nothing done)' }),
  ignored: t.Union([t.String(), t.Null()], { description: 'Why nothing changed, when nothing did' }),
})
export type NotificationResult = Static<typeof NotificationResult>
