// The page's logic: draw, reduce to the 8x8 digits format, run the model.
// ?input=v0,...,v63 runs the model on those 64 pixels instead of the
// drawing, and ?strokes=x,y,x,y,...|x,y,... draws those strokes (canvas
// pixels) with pointer events as a hand would; either writes
// {"pixels": [...], "probs": [...], "digit": d} into #result (what the
// tests read). ?model=URL and ?rt=URL load other files.
import { loadRuntime } from "./tfmini.js";

const params = new URLSearchParams(location.search);
const $ = (id) => document.getElementById(id);
const pad = $("pad"), ctx = pad.getContext("2d");
let rt = null, model = null;

function setStatus(s) { $("status").textContent = s; }

function report(obj) {
  $("result").textContent = JSON.stringify(obj);
  document.body.dataset.state = "error" in obj ? "error" : "done";
}

// scikit-learn's digits are 32x32 bitmaps of a digit scaled to fill the
// box, counted over 4x4 blocks. Do the same: crop the ink, centre it in a
// square, draw that at 32x32 and average 4x4 blocks, giving ink in [0, 1].
function toDigits() {
  const { width: w, height: h } = pad;
  const px = ctx.getImageData(0, 0, w, h).data;
  let x0 = w, y0 = h, x1 = -1, y1 = -1;
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++)
      if (px[4 * (y * w + x)] > 32) {
        x0 = Math.min(x0, x); x1 = Math.max(x1, x);
        y0 = Math.min(y0, y); y1 = Math.max(y1, y);
      }
  if (x1 < 0) return null;
  const side = Math.max(x1 - x0, y1 - y0) + 1;
  const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
  const c32 = document.createElement("canvas");
  c32.width = c32.height = 32;
  const g = c32.getContext("2d");
  g.fillStyle = "#000";
  g.fillRect(0, 0, 32, 32);
  g.drawImage(pad, cx - side / 2, cy - side / 2, side, side, 2, 2, 28, 28);
  const d = g.getImageData(0, 0, 32, 32).data;
  const out = new Float32Array(64);
  for (let by = 0; by < 8; by++)
    for (let bx = 0; bx < 8; bx++) {
      let s = 0;
      for (let y = 0; y < 4; y++)
        for (let x = 0; x < 4; x++)
          s += d[4 * ((4 * by + y) * 32 + 4 * bx + x)];
      out[by * 8 + bx] = s / (16 * 255);
    }
  return out;
}

function show(pixels, probs) {
  const small = $("small").getContext("2d");
  const img = small.createImageData(8, 8);
  pixels.forEach((v, i) => {
    const c = Math.round(255 * Math.min(1, Math.max(0, v)));
    img.data.set([c, c, c, 255], 4 * i);
  });
  small.putImageData(img, 0, 0);
  const best = probs.indexOf(Math.max(...probs));
  $("digit").textContent = String(best);
  $("bars").innerHTML = probs.map((p, k) =>
      `<div class="bar${k === best ? " best" : ""}"><span>${k}</span>` +
      `<div style="width:${(200 * p).toFixed(1)}px"></div>` +
      `${(100 * p).toFixed(1)}%</div>`).join("");
  return best;
}

function classify(pixels) {
  const [y] = model.run("serving_default", pixels, [1, 8, 8, 1]);
  const probs = Array.from(y.data);
  return { pixels: Array.from(pixels), probs, digit: show(pixels, probs) };
}

function onStroke() {
  const pixels = toDigits();
  if (model && pixels) report(classify(pixels));
}

// Drawing: thick white strokes on black, as the dataset's ink.
let drawing = false;
ctx.fillStyle = "#000";
ctx.fillRect(0, 0, pad.width, pad.height);
ctx.strokeStyle = "#fff";
ctx.lineWidth = 18;
ctx.lineCap = ctx.lineJoin = "round";
const at = (e) => {
  const r = pad.getBoundingClientRect();
  return [e.clientX - r.left, e.clientY - r.top];
};
pad.addEventListener("pointerdown", (e) => {
  drawing = true;
  try { pad.setPointerCapture(e.pointerId); } catch { /* synthetic */ }
  ctx.beginPath();
  ctx.moveTo(...at(e));
});
pad.addEventListener("pointermove", (e) => {
  if (!drawing) return;
  ctx.lineTo(...at(e));
  ctx.stroke();
});
pad.addEventListener("pointerup", () => { drawing = false; onStroke(); });
$("clear").addEventListener("click", () => {
  ctx.fillRect(0, 0, pad.width, pad.height);
  $("digit").textContent = "–";
  $("bars").innerHTML = "";
});
$("file").addEventListener("change", async (e) => {
  const f = e.target.files[0];
  if (!f) return;
  try {
    const m = await rt.loadModelFromFile(f);
    model?.free();
    model = m;
    setStatus(`loaded ${f.name}`);
    onStroke();
  } catch (err) {
    setStatus(`${f.name}: ${err.code ?? err.name}: ${err.message}`);
  }
});

try {
  rt = await loadRuntime(params.has("rt") ? { rtUrl: params.get("rt") }
                                          : {});
  const url = params.get("model") ?? "digits_cnn/saved_model.tfm";
  model = await rt.loadModelFromUrl(url);
  setStatus(`tfmini ${rt.version} (WebAssembly); model ${url}: draw a digit`);
  if (params.has("input")) {
    const v = params.get("input").split(",").map(Number);
    if (v.length !== 64 || v.some(Number.isNaN))
      throw new Error(`?input= needs 64 numbers, got ${v.length}`);
    report(classify(Float32Array.from(v)));
  } else if (params.has("strokes")) {
    const r = pad.getBoundingClientRect();
    for (const stroke of params.get("strokes").split("|")) {
      const v = stroke.split(",").map(Number);
      for (let i = 0; i + 1 < v.length; i += 2) {
        const type = i === 0 ? "pointerdown" : "pointermove";
        pad.dispatchEvent(new PointerEvent(type, {
          clientX: r.left + v[i], clientY: r.top + v[i + 1], pointerId: 1,
          bubbles: true }));
      }
      pad.dispatchEvent(new PointerEvent("pointerup", { pointerId: 1,
                                                        bubbles: true }));
    }
  }
} catch (err) {
  setStatus(`error: ${err.message}`);
  report({ error: `${err.code ?? err.name}: ${err.message}` });
}
