/**
 * The public face of the replay plugin: cassettes. `CassetteWriter` tees a model's exchanges into
 * one (the agent loop's `--record`), `readCassette` reads and checks one, `createReplayModel`
 * plays one lane of it back.
 */
export {
  CassetteWriter,
  createReplayModel,
  firstDifference,
  readCassette,
  replayMismatchOf,
  type Exchange,
  type ReplayMismatch,
} from './cassette.ts'
