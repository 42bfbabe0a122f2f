/** installs's error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('installs', {
  INSTALL_FAILED: {
    message: '{reason}',
    hint: 'Check the source (a folder, a git repository (URL#REF:PATH), an http(s) tarball, a server.json, NAME@MARKETPLACE or mcp:NAME) and that it can be reached; nothing was installed or changed.',
  },
  INSTALL_REFUSED: {
    message: '{reason}',
    hint: 'The source holds something unsafe (a path or link that leads out, a file type that is not a file, too much data) or does not match its pinned sha256; nothing was installed. Ask its publisher for a fixed release.',
  },
  INSTALL_TAMPERED: {
    message: '{reason}',
    hint: 'The installed files differ from the sha256 in the lock: `yoke update NAME` fetches it again from its source, `yoke add SOURCE --force` installs it anew; the other installs keep loading.',
  },
  INSTALL_LOCK_INVALID: {
    message: '{file} is not read: {reason}',
    hint: 'Fix it, or restore it from version control (a lock yoke wrote is JSON with "lockfileVersion": 1); a bad entry alone is left out and the others load: `yoke remove NAME` drops it, `yoke add SOURCE --force` replaces it.',
  },
  INSTALL_PLATFORM: {
    message: '{reason}',
    hint: 'The package ships no prebuilt executable for this machine (or one built for another): ask its publisher for one, or build it and install the package from a folder that holds it.',
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
