/** The docs' import path for the validation helper (`./validation/summaryValidator`). */
export { validateIngestRequest, isIsoTimestamp, MAX_PAYLOAD_CHARS } from "../core/validation";
export type { ValidationResult, FieldError } from "../core/validation";
