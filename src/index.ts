/**
 * @module yoke
 * The public API. Built-in plugins use only what is exported here.
 */
export { definePlugin, toPlugin, validateConfig } from './kernel/plugin.ts'
export type {
  ApplyResult,
  ConfigSchema,
  InjectedContext,
  Plugin,
  PluginDefinition,
} from './kernel/plugin.ts'
export type { ChildHandle, ChildOptions, Context, Logger, LogLevel } from './kernel/context.ts'
export { bindToContext } from './kernel/services.ts'
export type { Services, ServiceName, Provision, ContextBound } from './kernel/services.ts'
export { toDisposer, disposeAll, EffectScope, settledWithin } from './kernel/disposer.ts'
export type { Cleanup, Disposer, EffectNode } from './kernel/disposer.ts'
export { defineHooks, hookName, notify, tapHook, tapsOf } from './kernel/hooks.ts'
export type { AnyHook, TapFn, TapOptions } from './kernel/hooks.ts'
export { Kernel } from './kernel/kernel.ts'
export { guardProcess } from './kernel/faults.ts'
export type { LogRecord, SpawnOptions } from './kernel/kernel.ts'
export { Fiber } from './kernel/fiber.ts'
export type { FiberState } from './kernel/fiber.ts'
export type {
  ContributedControls,
  ControlAnswer,
  ControlHandler,
  ControlName,
  ControlRequest,
  Controls,
  DoctorCheck,
  InspectSection,
  SummarySection,
  FiberHost,
  FiberInfo,
  KernelHooks,
  ReloadNotice,
  RunMode,
  ServiceOf,
} from './kernel/types.ts'
export type { FileChange, WatchHandler, WatchOptions } from './kernel/watch.ts'
export { Composition } from './config/composer.ts'
export type { ComposeOptions, ReloadEvent, ReloadOptions } from './config/composer.ts'
export type { CacheImpact, PlannedChange, ReloadDefaults, ReloadGate } from './kernel/gates.ts'
export type { ReloadReport } from './config/reconcile.ts'
export { snapshot } from './cli/snapshot.ts'
export type { InstanceInfo, Snapshot } from './cli/snapshot.ts'
export { loadLayers, findPreset, yokeHome } from './config/layers.ts'
export { BUILTIN_PRESETS } from './roots.ts'
export { interpolate } from './config/interpolate.ts'
export { readConfigText } from './config/yaml.ts'
export type { LoadOptions, Layer, LayerStack } from './config/layers.ts'
export type { TrustOption, TrustVerdict, ProjectConfig } from './config/trust.ts'
export { runtimePlugin, runtimeView, hostTrack } from './runtime/index.ts'
export type { RuntimeApi, ApprovalApi, ScopeHandle, ToolLayer, Track } from './runtime/index.ts'
export { ToolRuntime, runtimeSettings } from './runtime/runtime.ts'
export type { CallOptions, RuntimeSettings, ToolChange } from './runtime/runtime.ts'
export { depthOf, nestsDeeper } from './runtime/json.ts'
export { GLOBAL, checkSchema, globToRegExp } from './runtime/registry.ts'
export { createAjv, riskyPattern } from './lib/schema-safety.ts'
export type { Guard, Mask } from './runtime/registry.ts'
export type {
  ApprovalAnswer,
  ApprovalBridge,
  ApprovalRequest,
  Asker,
  Question,
  QuestionAnswer,
} from './runtime/approval.ts'
export type { TaskInfo } from './runtime/tasks.ts'
export { partText } from './content.ts'
export type * from './runtime/types.ts'
export { catalogue, defineErrors, errorCatalogue, messageOf, YokeError } from './errors.ts'
export type { CatalogueEntry, ErrorCode, ErrorCodes, ErrorSite, ErrorSpec } from './errors.ts'
export {
  SyncHook,
  SyncBailHook,
  SyncWaterfallHook,
  AsyncParallelHook,
  AsyncSeriesHook,
  AsyncSeriesBailHook,
  AsyncSeriesWaterfallHook,
} from 'tapable'
export { createYoke } from './embed.ts'
export type { Yoke, YokeOptions } from './embed.ts'
