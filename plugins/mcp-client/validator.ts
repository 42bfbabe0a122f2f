/**
 * Servers' output schemas run on yoke's ajv (`createAjv`: their patterns on the linear-time re2js
 * engine too), through the SDK's validator interface. A schema that does not compile costs that
 * tool's calls, never the list (the tool sync skips it); a compiled one is kept per schema.
 */
import type {
  JsonSchemaType,
  JsonSchemaValidator,
  jsonSchemaValidator,
} from '@modelcontextprotocol/client'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv'
import { createAjv, messageOf } from 'yoke'

const ajvProvider = new AjvJsonSchemaValidator(createAjv({ validateSchema: false }) as never)
const compiled = new WeakMap<object, JsonSchemaValidator<unknown>>()

export const COMPILE_PROBLEM = "the server's outputSchema does not compile"

export const tolerantValidator: jsonSchemaValidator = {
  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    let validator = compiled.get(schema)
    if (!validator) {
      try {
        validator = ajvProvider.getValidator(schema)
      } catch (err) {
        const errorMessage = `${COMPILE_PROBLEM}: ${messageOf(err)}`
        validator = () => ({ valid: false, data: undefined, errorMessage })
      }
      compiled.set(schema, validator)
    }
    return validator as JsonSchemaValidator<T>
  },
}
