// Run a saved model under node through the same wrapper the page uses
// (tfmini.js over the WebAssembly runtime):
//
//   node examples/web/run.mjs MODEL [--signature NAME] [--rt tfmini_rt.js]
//        [--repeat N] < input.json
//
// MODEL is a saved_model.tfm or the folder holding it. input.json is
// {"data": [...], "shape": [...]} for one input, or a list of such in
// input order. Prints one JSON object: the runtime's version, the model's
// signatures, the outputs ({name, dtype, shape, data}) and, with
// --repeat N, the mean milliseconds per run over N runs after one warm-up.
import { existsSync, readFileSync, statSync } from "fs";
import { dirname, join, resolve } from "path";
import { fileURLToPath } from "url";
import { loadRuntime } from "./tfmini.js";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  if (i < 0) return dflt;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const signature = opt("--signature", "serving_default");
const repeat = Number(opt("--repeat", "0"));
let rtPath = opt("--rt", null);
if (!rtPath) {
  // Beside the page when copied there, else where make -C csrc wasm puts it.
  rtPath = [join(here, "tfmini_rt.js"),
            join(here, "..", "..", "build", "wasm", "tfmini_rt.js")]
      .find((p) => existsSync(p)) ?? join(here, "tfmini_rt.js");
}
if (args.length !== 1) {
  console.error("usage: node run.mjs MODEL [--signature NAME] [--rt JS] " +
                "[--repeat N] < input.json");
  process.exit(2);
}
let modelPath = resolve(args[0]);
if (statSync(modelPath).isDirectory())
  modelPath = join(modelPath, "saved_model.tfm");

try {
  const rt = await loadRuntime({ rtUrl: resolve(rtPath) });
  const model = rt.loadModel(readFileSync(modelPath));
  const raw = JSON.parse(readFileSync(0, "utf8"));
  const desc = model.functions().find((d) => d.name === signature);
  const list = (Array.isArray(raw) ? raw : [raw]).map((x, i) => {
    const dtype = desc?.inputs[i]?.dtype ?? "float32";
    return { data: dtype === "float32" ? Float32Array.from(x.data) : x.data,
             shape: x.shape };
  });
  const outputs = model.run(signature, list);
  let msPerRun = null;
  if (repeat > 0) {
    const t0 = performance.now();
    for (let i = 0; i < repeat; i++) model.run(signature, list);
    msPerRun = (performance.now() - t0) / repeat;
  }
  console.log(JSON.stringify({
    version: rt.version,
    signatures: model.signatures(),
    outputs: outputs.map((o) => ({ ...o, data: Array.from(o.data, Number) })),
    ms_per_run: msPerRun,
  }));
  model.free();
} catch (e) {
  console.error(`${e.code ?? e.name}: ${e.message}`);
  process.exit(1);
}
