/** exec-tools's error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('exec-tools', {
  MANIFEST_INVALID: {
    message: '{reason}',
    hint: 'Fix manifest.json at the position shown (`yoke plugins check DIR` lists every problem); the other packages keep working.',
  },
  EXECUTABLE_INVALID: {
    message: '{reason}',
    hint: 'Ship a program this machine runs: a binary built for its OS and architecture, or a script whose first line is #! and an absolute interpreter path (`yoke plugins check DIR` names the file and why); the other packages keep working.',
  },
  PACKAGE_UNSUPPORTED: {
    message: '{reason}',
    hint: 'Give the package what the message names (a program on PATH, a variable, network: true in the exec-tools config, its binary through `yoke add DIR`), or leave it out on this machine; the other packages keep working.',
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
