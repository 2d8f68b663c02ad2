// The attention explorer: plain JavaScript, no library. It asks /api/models for the models,
// /openapi.json for the request's options (one control each, built from the schema, so an
// option added to the server appears here without a change), and /api/translate for outputs
// with attention. Per model it draws the n-best list, the heatmap (output steps down, source
// symbols across, the weight on hover) with the bar chart of the selected step in the same
// table's foot (so each bar sits under its column), and a prefix box that continues the
// output from an edited start. Every model's answer is drawn, or its error shown in place of
// the old output. A server that needs a key (luong serve --api-keys) says so in /api/models;
// the page then shows a key box and sends its key as Authorization: Bearer KEY.
"use strict";

const $ = (selector, root = document) => root.querySelector(selector);
const show = (symbol) => (symbol === " " ? "\u2423" : symbol);  // a space shows as ␣
const HOVER_HINT = "hover a cell for its weight";
const BAR_HEIGHT = 86;  // px of a bar of weight 1 (its cell is 96 px high: a gap above the tallest)

// Request properties the page sets itself: the source box, the panels, the heatmap, and each
// panel's prefix box. Every other property of the schema becomes a control.
const HANDLED = new Set(["sources", "model", "attention", "prefix"]);

const state = {
  options: [],        // option descriptions (optionsFromSchema), in the schema's order
  limits: null,       // /api/models' limits
  models: [],         // /api/models' models
  keyRequired: false, // /api/models' key_required: the key box is shown
  runs: 0,            // runs started: each panel remembers the last one it belongs to
  inFlight: 0,        // runs not yet answered (the busy indicator)
};

function element(tag, attributes = {}, text = "") {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  if (text) node.textContent = text;
  return node;
}

// ---------------------------------------------------------------- options, from the schema

// A schema with its $ref followed (keys beside the $ref, such as a default, win).
function flatten(schema, root) {
  if (!schema || typeof schema !== "object") return {};
  if (typeof schema.$ref !== "string") return schema;
  const target = schema.$ref.replace(/^#\//, "").split("/").reduce((node, key) => node?.[key], root);
  const { $ref, ...beside } = schema;
  return { ...flatten(target, root), ...beside };
}

// One property of the request schema as {name, type, nullable, default, description, minimum,
// maximum, exclusiveMinimum, exclusiveMaximum, enum}; null for a type no control can hold.
// An optional value is anyOf [X, null] (pydantic) or type [X, "null"]; X holds the bounds.
function describeOption(name, property, root) {
  const outer = flatten(property, root);
  const branches = (outer.anyOf || outer.oneOf || outer.allOf || [outer]).map((b) => flatten(b, root));
  let nullable = false;
  let main = {};
  for (const branch of branches) {
    const types = Array.isArray(branch.type) ? branch.type : [branch.type];
    if (types.includes("null")) nullable = true;
    const kind = types.find((t) => t !== "null");
    if (kind !== undefined || branch.enum) main = { ...branch, type: kind };
  }
  const merged = { ...main, ...outer, type: main.type };
  const type = merged.enum ? "enum" : merged.type;
  if (!["integer", "number", "boolean", "string", "enum"].includes(type)) return null;
  const fallback = { boolean: false, string: nullable ? null : "" }[type] ?? null;
  return {
    name,
    type,
    nullable,
    default: "default" in merged ? merged.default : fallback,
    description: merged.description || merged.title || "",
    minimum: merged.minimum,
    maximum: merged.maximum,
    exclusiveMinimum: merged.exclusiveMinimum,
    exclusiveMaximum: merged.exclusiveMaximum,
    enum: merged.enum,
  };
}

function optionsFromSchema(openapi) {
  const schema = flatten(openapi?.components?.schemas?.TranslateRequest, openapi);
  if (!schema.properties) throw new Error("the schema has no TranslateRequest");
  return Object.entries(schema.properties)
    .filter(([name]) => !HANDLED.has(name))
    .map(([name, property]) => describeOption(name, property, openapi))
    .filter((option) => option !== null);
}

const shown = (value) => (value === null ? "none" : String(value));

// The bounds and default in words, e.g. "at least 0, at most 5; default 0".
function optionTerms(option) {
  const bounds = [];
  if (option.minimum !== undefined) bounds.push(`at least ${option.minimum}`);
  if (option.exclusiveMinimum !== undefined) bounds.push(`above ${option.exclusiveMinimum}`);
  if (option.maximum !== undefined) bounds.push(`at most ${option.maximum}`);
  if (option.exclusiveMaximum !== undefined) bounds.push(`below ${option.exclusiveMaximum}`);
  if (option.enum) bounds.push(`one of ${option.enum.map(shown).join(", ")}`);
  const words = bounds.length ? bounds.join(", ") + "; " : "";
  return `${words}default ${shown(option.default)}`;
}

function makeControl(option) {
  const id = `option-${option.name}`;
  let control;
  if (option.type === "boolean") {
    control = element("input", { id, type: "checkbox" });
    control.checked = option.default === true;
  } else if (option.type === "enum") {
    control = element("select", { id });
    if (option.nullable || !option.enum.includes(option.default)) {
      control.append(element("option", { value: "" }, `(${shown(option.default)})`));
    }
    option.enum.forEach((value, i) => {
      const item = element("option", { value: String(i) }, shown(value));
      item.selected = value === option.default;
      control.append(item);
    });
  } else if (option.type === "integer" || option.type === "number") {
    const attributes = { id, type: "number", step: option.type === "integer" ? "1" : "any" };
    if (option.minimum !== undefined) attributes.min = String(option.minimum);
    if (option.maximum !== undefined) attributes.max = String(option.maximum);
    control = element("input", attributes);
    control.value = option.default === null ? "" : String(option.default);
    if (option.nullable) control.placeholder = "none";
  } else {
    control = element("input", { id, type: "text" });
    control.value = option.default ?? "";
    if (option.nullable) control.placeholder = "none";
  }
  control.dataset.option = option.name;
  const help = `${option.description} (${optionTerms(option)})`;
  control.title = help;
  const label = element("label", { for: id, title: help }, option.name.replaceAll("_", "-"));
  const wrap = element("span", { class: `option option-${option.type}` });
  if (option.type === "boolean") wrap.append(control, label);
  else wrap.append(label, control);
  return wrap;
}

function buildOptions(options) {
  const fieldset = $("#options");
  const help = $("#option-help dl");
  for (const option of options) {
    fieldset.append(makeControl(option));
    help.append(element("dt", {}, option.name.replaceAll("_", "-")));
    help.append(element("dd", {}, `${option.description} (${optionTerms(option)})`));
  }
}

// The options whose control differs from its default, as request fields; an Error naming the
// option for a value the page cannot send (the server checks the bounds and says which).
function chosenOptions() {
  const chosen = {};
  for (const option of state.options) {
    const control = document.getElementById(`option-${option.name}`);
    let value;
    if (option.type === "boolean") {
      value = control.checked;
    } else if (option.type === "enum") {
      if (control.value === "") continue;
      value = option.enum[Number(control.value)];
    } else if (option.type === "integer" || option.type === "number") {
      if (control.validity.badInput) throw new Error(`${option.name}: expected a number`);
      if (control.value.trim() === "") continue;  // empty: the server's default
      value = Number(control.value);
      if (option.type === "integer" && Number.isInteger(value) && !Number.isSafeInteger(value)) {
        // JSON from JavaScript would round it: refuse rather than send another number.
        throw new Error(
          `${option.name}: expected an integer of at most ${Number.MAX_SAFE_INTEGER} in this page, got ${control.value}`,
        );
      }
    } else {
      value = control.value === "" && option.nullable ? null : control.value;
    }
    if (value !== option.default) chosen[option.name] = value;
  }
  return chosen;
}

// ---------------------------------------------------------------- requests

// An error answer's detail in words: FastAPI's own list of field errors, or the message.
function describeError(detail, status) {
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) {
    return detail
      .map((e) => `${(e.loc || []).filter((part) => part !== "body").join(".")}: ${e.msg}`)
      .join("; ");
  }
  return `HTTP ${status}: ${JSON.stringify(detail)}`;
}

async function translate(model, source, prefix, chosen) {
  const body = { sources: [source], model, attention: true, ...chosen };
  if (prefix) body.prefix = prefix;
  const headers = { "Content-Type": "application/json" };
  const key = $("#api-key").value;
  if (state.keyRequired && key) headers.Authorization = `Bearer ${key}`;
  let response;
  try {
    response = await fetch("/api/translate", { method: "POST", headers, body: JSON.stringify(body) });
  } catch (error) {
    throw new Error(`the server did not answer (${error.message})`);
  }
  const text = await response.text();
  let answer;
  try {
    answer = JSON.parse(text);
  } catch {
    answer = { detail: text || response.statusText };
  }
  if (!response.ok) throw new Error(describeError(answer.detail, response.status));
  return answer.results[0];
}

// ---------------------------------------------------------------- drawing

function clearPanel(panel, message) {
  $(".output", panel).textContent = "";
  $(".nbest", panel).replaceChildren();
  $(".heatmap", panel).replaceChildren();
  $(".caption", panel).textContent = "";
  $(".hover", panel).textContent = HOVER_HINT;
  $(".error", panel).textContent = message;
  panel.classList.add("empty");
}

function drawBars(panel, hypothesis, step) {
  const weights = hypothesis.attention[step];
  $(".heatmap tr.bars", panel).querySelectorAll("td").forEach((cell, s) => {
    const w = weights[s] ?? 0;
    const bar = $(".bar", cell);
    bar.style.height = `${Math.round(Math.max(0, Math.min(1, w)) * BAR_HEIGHT)}px`;
    bar.dataset.weight = String(w);
    cell.title = `${w.toFixed(3)}`;
  });
  $(".heatmap tr.bars th", panel).textContent = `step ${step + 1}`;
  $(".caption", panel).textContent =
    `step ${step + 1}: the weights output "${show(hypothesis.tokens[step])}" puts on the source`;
}

function drawHypothesis(panel, result, index) {
  const hypothesis = result.hypotheses[index];
  const source = result.source_tokens;
  const forced = Number(panel.dataset.forced || 0);
  panel.querySelectorAll(".nbest li").forEach((li, i) => li.classList.toggle("selected", i === index));
  $(".output", panel).textContent = hypothesis.text;
  const hover = $(".hover", panel);
  hover.textContent = HOVER_HINT;
  const table = $(".heatmap", panel);
  table.replaceChildren();
  const head = element("tr");
  head.append(element("th", { scope: "col", class: "step" }, "step"), element("th", { scope: "col" }));
  source.forEach((symbol) => head.append(element("th", { scope: "col" }, show(symbol))));
  table.appendChild(element("thead")).append(head);
  const body = table.appendChild(element("tbody"));
  const select = (t) => {
    body.querySelectorAll("tr").forEach((row, i) => row.classList.toggle("selected", i === t));
    drawBars(panel, hypothesis, t);
  };
  hypothesis.tokens.forEach((symbol, t) => {
    const row = element("tr", t < forced ? { class: "forced" } : {});
    const label = element("th", { scope: "row", tabindex: "0", title: "show this step's bars" }, show(symbol));
    label.addEventListener("click", () => select(t));
    label.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        select(t);
      }
    });
    row.append(element("td", { class: "step" }, String(t + 1)), label);
    hypothesis.attention[t].forEach((w, s) => {
      const cell = element("td", {
        class: "cell", "data-weight": String(w), "data-step": String(t), "data-source": String(s),
        style: `background: rgba(33, 102, 172, ${Math.max(0, Math.min(1, w)).toFixed(4)})`,
      });
      cell.addEventListener("mouseenter", () => {
        hover.textContent = `step ${t + 1}, ${show(symbol)} \u2190 ${show(source[s])}: ${w.toFixed(3)}`;
      });
      cell.addEventListener("click", () => select(t));
      row.append(cell);
    });
    body.append(row);
  });
  body.addEventListener("mouseleave", () => { hover.textContent = HOVER_HINT; });
  // The bar chart is the table's foot: one bar per source column, under that column.
  const foot = table.appendChild(element("tfoot"));
  const bars = element("tr", { class: "bars" });
  bars.append(element("th", { colspan: "2", scope: "row" }));
  source.forEach(() => {
    const cell = element("td");
    cell.append(element("div", { class: "bar" }));
    bars.append(cell);
  });
  const labels = element("tr", { class: "bar-labels" });
  labels.append(element("th", { colspan: "2" }));
  source.forEach((symbol) => labels.append(element("td", {}, show(symbol))));
  foot.append(bars, labels);
  select(Math.min(forced, hypothesis.tokens.length - 1));
}

function drawResult(panel, result) {
  if (!result.hypotheses.length) {
    clearPanel(panel, "no output");
    return;
  }
  panel.classList.remove("empty");
  $(".error", panel).textContent = "";
  panel.dataset.forced = String(result.prefix_tokens);
  const list = $(".nbest", panel);
  list.replaceChildren();
  result.hypotheses.forEach((h, i) => {
    const item = element("li", { tabindex: "0" });
    item.append(element("span", { class: "text" }, h.text));
    item.append(element("span", { class: "score", title: "log-probability" },
      h.score === null ? "-inf" : h.score.toFixed(4)));
    item.addEventListener("click", () => drawHypothesis(panel, result, i));
    item.addEventListener("keydown", (event) => {
      if (event.key === "Enter") drawHypothesis(panel, result, i);
    });
    list.append(item);
  });
  drawHypothesis(panel, result, 0);
}

function makePanel(model) {
  const panel = element("section", { class: "panel empty", "data-model": model.name });
  const title = element("h2", {}, model.name + " ");
  title.append(element("small", {}, `${model.config.attention} attention`));
  panel.append(title);
  panel.append(element("div", { class: "error" }));
  panel.append(element("div", { class: "output" }));
  panel.append(element("ol", { class: "nbest", "aria-label": `${model.name}: outputs and scores` }));
  const row = element("div", { class: "prefix-row" });
  const label = element("label", {}, "prefix ");
  const prefix = element("input", { class: "prefix", type: "text", placeholder: "the start of the output" });
  label.append(prefix);
  const button = element("button", { class: "continue", type: "button" }, "Continue");
  row.append(label, button);
  panel.append(row);
  panel.append(element("div", { class: "hover", "aria-live": "polite" }, HOVER_HINT));
  panel.append(element("table", { class: "heatmap" }));
  panel.append(element("div", { class: "caption" }));
  const go = () => run([panel]);
  button.addEventListener("click", go);
  prefix.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      go();
    }
  });
  return panel;
}

// ---------------------------------------------------------------- running

function setBusy(change) {
  state.inFlight += change;
  const busy = state.inFlight > 0;
  $("#busy").hidden = !busy;
  if (busy) document.body.dataset.busy = "1";
  else delete document.body.dataset.busy;
}

function setStatus(messages) {
  const status = $("#status");
  status.replaceChildren(...messages.map((message) => element("p", {}, message)));
}

// Translate the source with each of `panels`' models and its own prefix box; draw every answer
// and show every error. A panel that a later run took over ignores this one's answer.
async function run(panels) {
  const source = $("#source").value;
  let chosen;
  try {
    chosen = chosenOptions();
  } catch (error) {
    setStatus([error.message]);
    return;
  }
  const ticket = String(++state.runs);
  setBusy(+1);
  for (const panel of panels) {
    panel.dataset.run = ticket;
    panel.setAttribute("aria-busy", "true");
  }
  const outcomes = await Promise.allSettled(
    panels.map((panel) => translate(panel.dataset.model, source, $(".prefix", panel).value, chosen)),
  );
  const errors = new Map();  // message -> the models that got it (a bad option: every model)
  outcomes.forEach((outcome, i) => {
    const panel = panels[i];
    if (panel.dataset.run !== ticket) return;
    panel.removeAttribute("aria-busy");
    if (outcome.status === "fulfilled") {
      drawResult(panel, outcome.value);
    } else {
      clearPanel(panel, outcome.reason.message);
      const message = outcome.reason.message;
      errors.set(message, [...(errors.get(message) || []), panel.dataset.model]);
    }
  });
  if (ticket === String(state.runs)) {
    setStatus([...errors].map(([message, models]) => `${models.join(", ")}: ${message}`));
  }
  setBusy(-1);
  document.body.dataset.done = String(Number(document.body.dataset.done || 0) + 1);
}

// The length counter: characters typed against the shortest limit among the shown models.
function updateLength() {
  const shownNames = new Set(
    [...document.querySelectorAll(".panel")].filter((p) => !p.hidden).map((p) => p.dataset.model),
  );
  const limits = state.models
    .filter((model) => shownNames.has(model.name))
    .map((model) => Math.min(state.limits.max_source_len, model.config.max_src_len ?? Infinity));
  const limit = limits.length ? Math.min(...limits) : state.limits.max_source_len;
  const length = [...$("#source").value].length;  // code points, as the server counts
  const counter = $("#length");
  counter.textContent = `${length}/${limit}`;
  counter.classList.toggle("over", length > limit);
}

async function getJson(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.json();
}

async function start() {
  const [{ models, limits, key_required: keyRequired }, openapi] = await Promise.all([
    getJson("/api/models"),
    getJson("/openapi.json").catch((error) => error),
  ]);
  state.models = models;
  state.limits = limits;
  state.keyRequired = keyRequired === true;
  $("#key-row").hidden = !state.keyRequired;
  try {
    if (openapi instanceof Error) throw openapi;
    state.options = optionsFromSchema(openapi);
    buildOptions(state.options);
  } catch (error) {
    setStatus([`no decoding options (the server's defaults apply): ${error.message}`]);
  }
  const picker = $("#models");
  const panels = $("#panels");
  for (const model of models) {
    const label = element("label");
    const box = element("input", { type: "checkbox", value: model.name });
    box.checked = true;
    box.addEventListener("change", () => {
      panels.querySelector(`[data-model="${CSS.escape(model.name)}"]`).hidden = !box.checked;
      updateLength();
    });
    label.append(box, " " + model.name);
    if (models.length > 1) picker.append(label);
    panels.append(makePanel(model));
  }
  $("#source").addEventListener("input", updateLength);
  updateLength();
  $("#form").addEventListener("submit", (event) => {
    event.preventDefault();
    const visible = [...panels.querySelectorAll(".panel")].filter((p) => !p.hidden);
    visible.forEach((p) => { $(".prefix", p).value = ""; });
    run(visible);
  });
  document.body.dataset.ready = "1";
  // The example, answered at once (where a key is needed, once the user has typed it).
  if ($("#source").value && !state.keyRequired) $("#form").requestSubmit();
}

start().catch((error) => setStatus([`the page could not start: ${error.message}`]));
