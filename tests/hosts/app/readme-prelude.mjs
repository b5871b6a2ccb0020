// The names the repository README's JS examples use without defining them (like the hidden
// lines of a doctest), from the recorded fixtures. Imported first by each extracted example.
import { readFileSync } from 'node:fs';

const bodyText = readFileSync(new URL('../fixtures/anthropic-request.json', import.meta.url), 'utf8');
const request = JSON.parse(bodyText);
const docs = JSON.parse(readFileSync(new URL('./web/corpus.json', import.meta.url), 'utf8'));
const question = 'How do I stay updated on programming tools?';
const candidatesFromYourVectorDb = docs.slice(0, 8).map((d, i) => ({ id: `${d.id}#0`, docId: d.id, score: 0.9 - i * 0.05, content: d.text }));
Object.assign(globalThis, { bodyText, request, messages: request.messages, docs, question, candidatesFromYourVectorDb });
