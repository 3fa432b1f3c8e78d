export { ActivityPage } from './activity'
export { EmailDetail } from './email'
export { SuppressionsPage } from './suppressions'
