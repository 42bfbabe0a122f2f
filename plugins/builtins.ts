/**
 * Every built-in plugin's public types in one place: importing this file (an embedder:
 * `import type {} from 'yoke/builtins'`) brings in the `Services` and `Controls` each built-in
 * declares beside its api.ts, so `yoke.get('skills')` and `cli.control('skills/list')` are typed.
 * It holds no code. test/layering.test.ts checks that it lists every plugin with an api.ts.
 */
import type {} from './agent-loop/api.ts'
import type {} from './capabilities/api.ts'
import type {} from './claude-hooks/api.ts'
import type {} from './claude-plugins/api.ts'
import type {} from './code-mode/api.ts'
import type {} from './console/api.ts'
import type {} from './exec-tools/api.ts'
import type {} from './installs/api.ts'
import type {} from './mcp/api.ts'
import type {} from './mcp-client/api.ts'
import type {} from './mcp-server/api.ts'
import type {} from './models/api.ts'
import type {} from './process/api.ts'
import type {} from './prompt/api.ts'
import type {} from './replay/api.ts'
import type {} from './repository/api.ts'
import type {} from './shell-hooks/api.ts'
import type {} from './skills/api.ts'
import type {} from './store/api.ts'
import type {} from './telemetry/api.ts'
import type {} from './tool-search/api.ts'
import type {} from './turn-guard/api.ts'
