// Replaces wasm-bindgen's passStringToWasm0 in the generated glue with one that hands long
// strings to TextEncoder.encodeInto at once.
//
//   node scripts/patch-glue.mjs pkg/condense.js [more glue files]      (scripts/build-pkg runs it)
//
// Why: every `&str` argument (compressJson's text, applyWatermarkJson's, a query) and every
// JsString the core reads (`as_string()`, e.g. the JSON.stringify of compress's messages) is
// copied into wasm memory by passStringToWasm0. wasm-bindgen's version first copies the string
// one UTF-16 unit at a time in a JS loop until the first non-ASCII character, and calls
// encodeInto only for the rest (wasm-bindgen PRs #1470 and #1414, and issue #1776 on
// re-evaluating that bypass). On V8 today the loop is the slow part: over the 1.57 MB of
// sharegpt_dev it costs 6-8 ms where encodeInto takes 0.6 ms (bench/string_pass.mjs measures
// both on the same strings). Short strings keep the loop (a native call costs more than a few
// characters); long ones go to encodeInto with room for the ASCII case, and only when a string
// is not all ASCII does the buffer grow once to the worst case of what is left (3 bytes per
// UTF-16 unit), as wasm-bindgen's own fallback does. The bytes written are the same (both paths
// are UTF-8 by the Encoding Standard, lone surrogates as U+FFFD); the tests run on this glue.
//
// The patch matches the generated function exactly and fails loudly otherwise, so that a new
// wasm-bindgen version (pinned in Cargo.toml) is looked at rather than silently left slow.
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const MARK = 'condense (scripts/patch-glue.mjs)';

const HEAD = `function passStringToWasm0(arg, malloc, realloc) {
    if (realloc === undefined) {
        const buf = cachedTextEncoder.encode(arg);
        const ptr = malloc(buf.length, 1) >>> 0;
        getUint8ArrayMemory0().subarray(ptr, ptr + buf.length).set(buf);
        WASM_VECTOR_LEN = buf.length;
        return ptr;
    }

    let len = arg.length;
    let ptr = malloc(len, 1) >>> 0;

    const mem = getUint8ArrayMemory0();

    let offset = 0;

    for (; offset < len; offset++) {
        const code = arg.charCodeAt(offset);
        if (code > 0x7F) break;
        mem[ptr + offset] = code;
    }
`;

// The rest of the generated function, kept as it is.
const TAIL = `    if (offset !== len) {
        if (offset !== 0) {
            arg = arg.slice(offset);
        }
        ptr = realloc(ptr, len, len = offset + arg.length * 3, 1) >>> 0;
        const view = getUint8ArrayMemory0().subarray(ptr + offset, ptr + len);
        const ret = cachedTextEncoder.encodeInto(arg, view);

        offset += ret.written;
        ptr = realloc(ptr, len, offset, 1) >>> 0;
    }

    WASM_VECTOR_LEN = offset;
    return ptr;
}
`;

/** wasm-bindgen's function, as generated. */
export const ORIGINAL = HEAD + TAIL;

// Inserted before the generated ASCII loop: long strings are encoded by encodeInto at once;
// short ones fall through to the loop (and its non-ASCII tail), unchanged.
const ANCHOR = '    const mem = getUint8ArrayMemory0();\n';
const LONG_STRINGS = `    // condense (scripts/patch-glue.mjs): long strings go to encodeInto at once.
    if (len >= 256) {
        let written = 0;
        let read = 0;
        let cap = len;
        for (;;) {
            const ret = cachedTextEncoder.encodeInto(
                read === 0 ? arg : arg.slice(read),
                getUint8ArrayMemory0().subarray(ptr + written, ptr + cap),
            );
            read += ret.read;
            written += ret.written;
            if (read >= len) break;
            const grown = written + (len - read) * 3;
            ptr = realloc(ptr, cap, grown, 1) >>> 0;
            cap = grown;
        }
        if (written !== cap) ptr = realloc(ptr, cap, written, 1) >>> 0;
        WASM_VECTOR_LEN = written;
        return ptr;
    }

`;

/** The function that replaces it. */
export const PATCHED = HEAD.replace(ANCHOR, LONG_STRINGS + ANCHOR) + TAIL;

/** Patches each glue file in place (a file already patched is left as it is). */
export function patch(files) {
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    if (text.includes(MARK)) continue;
    const at = text.indexOf(ORIGINAL);
    if (at < 0 || text.indexOf(ORIGINAL, at + 1) >= 0) {
      throw new Error(`patch-glue: ${file}: passStringToWasm0 is not the one this patch was written for (a new wasm-bindgen?): update scripts/patch-glue.mjs`);
    }
    writeFileSync(file, text.slice(0, at) + PATCHED + text.slice(at + ORIGINAL.length));
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error('usage: node scripts/patch-glue.mjs GLUE.js...');
    process.exit(2);
  }
  try {
    patch(files);
  } catch (e) {
    console.error(e.message);
    process.exit(1);
  }
}
