// tfmini in JavaScript: the C runtime (include/tfmini/tfmini.h) compiled
// to WebAssembly (make -C csrc wasm -> tfmini_rt.js + tfmini_rt.wasm),
// behind a small API. The same module runs in a browser page, a worker
// and node (>= 16):
//
//   import { loadRuntime } from "./tfmini.js";
//   const rt = await loadRuntime();             // finds tfmini_rt.js
//   const model = await rt.loadModelFromUrl("digits_cnn/saved_model.tfm");
//   model.signatures();     // [{name, inputs: [{name, dtype, shape}], outputs}]
//   const [y] = model.run("serving_default", pixels, [1, 8, 8, 1]);
//   y.data; y.shape;        // Float32Array, [1, 10]
//   model.free();
//
// A saved model is the one file that tf.saved_model.save writes,
// saved_model.tfm: fetch it by URL, read it from a File the user picked
// (rt.loadModelFromFile), or pass its bytes (rt.loadModel). Errors are
// thrown as TfminiError, with TensorFlow's class name in .code and the C
// runtime's message (op, shapes, dtypes) in .message.

// The C enums (tfmini.h), in their numeric order.
const DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64",
                "float16", "float32", "float64"];
const ARRAYS = {
  bool: Uint8Array, int8: Int8Array, uint8: Uint8Array, int16: Int16Array,
  int32: Int32Array, int64: BigInt64Array, float16: Uint16Array,
  float32: Float32Array, float64: Float64Array,
};
const MAX_DIMS = 8;

export class TfminiError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "TfminiError";
    this.code = code;
  }
}

const isNode = typeof process !== "undefined" && process.versions != null &&
    process.versions.node != null && typeof window === "undefined";

// The Emscripten factory createTfminiRt, from the script at url.
async function factoryFrom(url) {
  if (isNode) {
    const { createRequire } = await import("module");
    const { fileURLToPath } = await import("url");
    const path = url instanceof URL ? fileURLToPath(url) : url;
    return createRequire(import.meta.url)(path);
  }
  if (typeof globalThis.createTfminiRt === "function")
    return globalThis.createTfminiRt;
  if (typeof importScripts === "function") {        // a classic worker
    importScripts(String(url));
  } else {
    await new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = String(url);
      s.onload = resolve;
      s.onerror = () => reject(new TfminiError(
          "NotFoundError", `tfmini: cannot load the runtime script ${url}`));
      document.head.appendChild(s);
    });
  }
  if (typeof globalThis.createTfminiRt !== "function")
    throw new TfminiError("NotFoundError",
                          `tfmini: ${url} did not define createTfminiRt`);
  return globalThis.createTfminiRt;
}

// Load the runtime. options.rtUrl: where tfmini_rt.js is (default: beside
// this file); its .wasm is looked for beside it.
export async function loadRuntime(options = {}) {
  const rtUrl = options.rtUrl ?? new URL("tfmini_rt.js", import.meta.url);
  const factory = await factoryFrom(rtUrl);
  const modArgs = {
    print: options.print ?? ((s) => console.log(s)),
    printErr: options.printErr ?? ((s) => console.warn(s)),
  };
  if (isNode) {
    // Emscripten 3.1's loader would fetch() a file path in node >= 18,
    // whose fetch takes URLs only: hand it the bytes instead.
    const { readFile } = await import("fs/promises");
    const { fileURLToPath } = await import("url");
    const js = rtUrl instanceof URL ? fileURLToPath(rtUrl) : String(rtUrl);
    modArgs.wasmBinary = await readFile(js.replace(/\.js$/, ".wasm"));
  } else {
    modArgs.locateFile = (name) => new URL(name, new URL(rtUrl,
        globalThis.location?.href)).href;
  }
  return new Runtime(await factory(modArgs));
}

class Runtime {
  constructor(M) {
    this.M = M;
    this.version = M.UTF8ToString(M._tfmini_version());
    this.formatVersion = M._tfmini_saved_model_format();
    this._next = 0;
    M.FS.mkdirTree("/models");
  }

  // A model from the bytes of a saved_model.tfm (ArrayBuffer, typed array).
  loadModel(bytes) {
    const M = this.M;
    const data = bytes instanceof Uint8Array ? bytes
        : ArrayBuffer.isView(bytes)
        ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
        : new Uint8Array(bytes);
    // The C loader reads export_dir/saved_model.tfm: give it that folder in
    // Emscripten's in-memory file system, and drop it once read (the model
    // keeps what it needs in its own memory).
    const dir = `/models/${this._next++}`;
    M.FS.mkdir(dir);
    M.FS.writeFile(`${dir}/saved_model.tfm`, data);
    const st = M._tfmini_status_new();
    try {
      const m = withString(M, dir, (p) => M._tfmini_model_load(p, st));
      check(M, st, m === 0);
      return new Model(M, m);
    } finally {
      M._tfmini_status_free(st);
      M.FS.unlink(`${dir}/saved_model.tfm`);
      M.FS.rmdir(dir);
    }
  }

  async loadModelFromUrl(url, init) {
    const r = await fetch(url, init);
    if (!r.ok)
      throw new TfminiError("NotFoundError",
                            `tfmini: fetching ${url}: HTTP ${r.status}`);
    return this.loadModel(await r.arrayBuffer());
  }

  // A File or Blob, as an <input type="file"> gives it.
  async loadModelFromFile(file) {
    return this.loadModel(await file.arrayBuffer());
  }
}

class Model {
  constructor(M, ptr) {
    this.M = M;
    this.ptr = ptr;
    const lenp = M._malloc(4);
    const p = M._tfmini_model_meta(ptr, lenp);
    M._free(lenp);
    this.meta = p ? JSON.parse(M.UTF8ToString(p)) : null;
    this._fns = [];
    const n = M._tfmini_model_function_count(ptr);
    for (let f = 0; f < n; f++) this._fns.push(this._describe(f));
  }

  _describe(f) {
    const M = this.M, m = this.ptr;
    const name = M.UTF8ToString(M._tfmini_model_function_name(m, f));
    const side = (count, nameOf, dtypeOf, shapeOf) => {
      const out = [];
      const dims = M._malloc(8 * MAX_DIMS);
      for (let i = 0; i < count(m, f); i++) {
        const rank = shapeOf(m, f, i, dims, MAX_DIMS);
        const d = new BigInt64Array(M.HEAPU8.buffer, dims, MAX_DIMS);
        out.push({
          name: M.UTF8ToString(nameOf(m, f, i)),
          dtype: DTYPES[dtypeOf(m, f, i)] ?? "invalid",
          shape: rank < 0 ? null
              : Array.from(d.subarray(0, rank), (v) => v < 0n ? null
                                                         : Number(v)),
        });
      }
      M._free(dims);
      return out;
    };
    const desc = {
      name, index: f,
      inputs: side(M._tfmini_model_input_count, M._tfmini_model_input_name,
                   M._tfmini_model_input_dtype, M._tfmini_model_input_shape),
      outputs: side(M._tfmini_model_output_count,
                    M._tfmini_model_output_name,
                    M._tfmini_model_output_dtype,
                    M._tfmini_model_output_shape),
    };
    // A signature's input names and output keys are in the meta (the
    // runtime names outputs output_<k>), in run order.
    const sig = this.meta?.signatures?.[name];
    if (sig) {
      sig.inputs?.forEach(([key], i) => {
        if (desc.inputs[i]) desc.inputs[i].name = key;
      });
      sig.outputs?.forEach(([key], i) => {
        if (desc.outputs[i]) desc.outputs[i].name = key;
      });
    }
    return desc;
  }

  // Every function the model holds (traced functions and signatures).
  functions() {
    return this._fns.map((d) => structuredClone(d));
  }

  // The serving signatures (serving_default, ...); with none recorded,
  // every function.
  signatures() {
    const names = this.meta?.signatures ? Object.keys(this.meta.signatures)
                                        : null;
    return this.functions().filter((d) => !names || names.includes(d.name));
  }

  // Run function `name` (a signature or a traced function). inputs: one
  // typed array with its shape (run(name, data, shape)), or an array of
  // {data, shape} in input order, or an object {inputName: {data, shape}}.
  // A plain Array is taken as float32. Returns [{name, dtype, shape,
  // data}], one per output, data a typed array of the output's dtype.
  run(name, inputs, shape) {
    const M = this.M;
    if (this.ptr === 0)
      throw new TfminiError("ValueError", "tfmini: the model was freed");
    const desc = this._fns.find((d) => d.name === name);
    if (!desc)
      throw new TfminiError("NotFoundError",
          `tfmini: no function "${name}" in the model (it has: ` +
          `${this._fns.map((d) => d.name).join(", ")})`);
    let list;
    if (shape !== undefined) list = [{ data: inputs, shape }];
    else if (Array.isArray(inputs)) list = inputs;
    else list = desc.inputs.map((d) => {
      if (!(d.name in inputs))
        throw new TfminiError("InvalidArgumentError",
            `tfmini: ${name}: input "${d.name}" is missing`);
      return inputs[d.name];
    });
    if (list.length !== desc.inputs.length)
      throw new TfminiError("InvalidArgumentError",
          `tfmini: ${name} takes ${desc.inputs.length} inputs, got ` +
          `${list.length}`);
    const nin = list.length, nout = desc.outputs.length;
    const st = M._tfmini_status_new();
    const tensors = [];
    const ins = M._malloc(4 * Math.max(nin, 1));
    const outs = M._malloc(4 * Math.max(nout, 1));
    try {
      list.forEach((x, i) => {
        const dtype = desc.inputs[i].dtype;
        tensors.push(newTensor(M, dtype, x.data, x.shape, st,
                               `${name}: input ${i} ("${desc.inputs[i].name}")`));
        M.HEAPU32[(ins >> 2) + i] = tensors[i];
      });
      const code = M._tfmini_model_run(this.ptr, desc.index, ins, nin, outs,
                                       nout, st);
      check(M, st, code !== 0);
      const result = [];
      for (let k = 0; k < nout; k++) {
        const t = M.HEAPU32[(outs >> 2) + k];
        result.push({ name: desc.outputs[k].name, ...readTensor(M, t) });
        M._tfmini_tensor_free(t);
      }
      return result;
    } finally {
      tensors.forEach((t) => M._tfmini_tensor_free(t));
      M._free(ins);
      M._free(outs);
      M._tfmini_status_free(st);
    }
  }

  free() {
    if (this.ptr) this.M._tfmini_model_free(this.ptr);
    this.ptr = 0;
  }
}

function check(M, st, failed) {
  const code = M._tfmini_status_code(st);
  if (code !== 0 || failed)
    throw new TfminiError(M.UTF8ToString(M._tfmini_code_name(code)),
                          M.UTF8ToString(M._tfmini_status_message(st)));
}

function withString(M, s, fn) {
  const n = M.lengthBytesUTF8(s) + 1;
  const p = M._malloc(n);
  M.stringToUTF8(s, p, n);
  try { return fn(p); } finally { M._free(p); }
}

function newTensor(M, dtype, data, shape, st, what) {
  const Ctor = ARRAYS[dtype];
  if (!Ctor)
    throw new TfminiError("InvalidArgumentError",
                          `tfmini: ${what} has unsupported dtype ${dtype}`);
  if (Array.isArray(data))
    data = dtype === "int64" ? BigInt64Array.from(data, BigInt)
                             : Ctor.from(data);
  if (!(data instanceof Ctor))
    throw new TfminiError("InvalidArgumentError",
        `tfmini: ${what} is ${dtype}: pass a ${Ctor.name}, not a ` +
        `${data?.constructor?.name ?? typeof data}`);
  if (!Array.isArray(shape) || shape.length > MAX_DIMS ||
      !shape.every((d) => Number.isInteger(d) && d >= 0))
    throw new TfminiError("InvalidArgumentError",
        `tfmini: ${what}: shape must be an array of at most ${MAX_DIMS} ` +
        `non-negative integers, got ${JSON.stringify(shape)}`);
  const n = shape.reduce((a, b) => a * b, 1);
  if (n !== data.length)
    throw new TfminiError("InvalidArgumentError",
        `tfmini: ${what}: shape [${shape}] holds ${n} elements, the data ` +
        `${data.length}`);
  const dims = M._malloc(8 * Math.max(shape.length, 1));
  const buf = M._malloc(Math.max(data.byteLength, 1));
  try {
    new BigInt64Array(M.HEAPU8.buffer, dims, shape.length)
        .set(shape.map(BigInt));
    M.HEAPU8.set(new Uint8Array(data.buffer, data.byteOffset,
                                data.byteLength), buf);
    const t = M._tfmini_tensor_new(DTYPES.indexOf(dtype), dims,
                                   shape.length, buf, data.byteLength, st);
    check(M, st, t === 0);
    return t;
  } finally {
    M._free(dims);
    M._free(buf);
  }
}

// A copy of tensor t's dtype, shape and elements (the wasm memory may move
// when it grows, so nothing returned points into it).
function readTensor(M, t) {
  const dtype = DTYPES[M._tfmini_tensor_dtype(t)];
  const rank = M._tfmini_tensor_rank(t);
  const shape = [];
  for (let i = 0; i < rank; i++)
    shape.push(Number(M._tfmini_tensor_dim(t, i)));
  const nbytes = M._tfmini_tensor_byte_size(t);
  const bytes = M.HEAPU8.slice(M._tfmini_tensor_data(t),
                               M._tfmini_tensor_data(t) + nbytes);
  const Ctor = ARRAYS[dtype];
  return { dtype, shape,
           data: new Ctor(bytes.buffer, 0, nbytes / Ctor.BYTES_PER_ELEMENT) };
}
