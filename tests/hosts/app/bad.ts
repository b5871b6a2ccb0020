// Must NOT compile: tsc on this file proves the check can fail (a misspelt option, a wrong type).
import { compress, prepareRequest } from 'condense-ctx';
compress([{ role: 'user', content: 'x' }], { recencyWindw: 4 });
const n: number = prepareRequest('{}').body;
