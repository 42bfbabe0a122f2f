// greeter: a dependency-free plugin in plain JavaScript, loaded by path.
// It waits for the `auditLog` service (inject), and every `intervalMs` logs a greeting with how
// many lifecycle events the audit log holds. Disable the audit instance and it goes pending.
export default {
  name: 'greeter',
  inject: ['auditLog'],
  apply(ctx, config) {
    const greeting = config.greeting ?? 'hello'
    const every = config.intervalMs ?? 0
    ctx.logger.info(`${greeting}! the audit log holds ${ctx.auditLog.entries().length} events`)
    if (every > 0)
      ctx.setInterval(
        () => ctx.logger.info(`${greeting} again: ${ctx.auditLog.entries().length} events`),
        every,
      )
  },
}
