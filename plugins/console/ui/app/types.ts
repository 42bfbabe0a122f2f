/** The wire protocol's types (the server's plugins/console/protocol.ts), type-only. */
export type * from '../../protocol.ts'
