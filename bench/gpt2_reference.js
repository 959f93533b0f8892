#!/usr/bin/env node
// The JS reference GPT-2 encoder (gpt-3-encoder 1.1.4's Encoder.js, unpacked by
// scripts/fetch-tokenizer gpt2) run on the inputs shapelaw's encoder takes, for the
// identity tests (tests/tokenizer) and the speed comparison (bench/data.sh).
//   node gpt2_reference.js DIR jsonl CORPUS.jsonl OUT.u32   documents' ids, each followed by 50256
//   node gpt2_reference.js DIR text FILE OUT.u32            the file read as UTF-8 (node's
//                                                           decoding: U+FFFD for bad bytes), one text
//   node gpt2_reference.js DIR each FILE OUT.u32            every line (JSON string) encoded alone,
//                                                           its ids then 0xFFFFFFFF
//   node gpt2_reference.js DIR split FILE OUT.u32           the file (UTF-8) cut by Encoder.js's own
//                                                           pattern: the UTF-8 length of each piece
// Ids are written as little-endian uint32; stderr gets "<bytes> bytes in <s> s".
'use strict';
const fs = require('fs');
const path = require('path');
const [dir, mode, input, output] = process.argv.slice(2);
if (!output) {
  console.error('usage: gpt2_reference.js DIR jsonl|text|each INPUT OUTPUT');
  process.exit(2);
}
const { encode } = require(path.resolve(dir, 'Encoder.js'));
const ids = [];
let bytes = 0;
const start = process.hrtime.bigint();
if (mode === 'split') {
  // the pattern as Encoder.js spells it, taken from its source rather than copied here
  const source = fs.readFileSync(path.resolve(dir, 'Encoder.js'), 'utf8');
  const pat = eval(source.match(/^const pat = (\/.*\/gu)$/m)[1]);
  const text = fs.readFileSync(input, 'utf8');
  bytes = Buffer.byteLength(text);
  for (const m of text.matchAll(pat)) ids.push(Buffer.byteLength(m[0]));
} else if (mode === 'text') {
  const text = fs.readFileSync(input, 'utf8');
  bytes = Buffer.byteLength(text);
  for (const id of encode(text)) ids.push(id);
} else {
  for (const line of fs.readFileSync(input, 'utf8').split('\n')) {
    if (line === '') continue;
    const text = mode === 'jsonl' ? JSON.parse(line).text : JSON.parse(line);
    bytes += Buffer.byteLength(text);
    for (const id of encode(text)) ids.push(id);
    ids.push(mode === 'jsonl' ? 50256 : 0xFFFFFFFF);
  }
}
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const out = Buffer.alloc(ids.length * 4);
ids.forEach((id, i) => out.writeUInt32LE(id, i * 4));
fs.writeFileSync(output, out);
console.error(`${bytes} bytes in ${seconds.toFixed(3)} s`);
