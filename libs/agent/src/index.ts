export { errorSignature, splitErrorMessage } from './error-signature';
