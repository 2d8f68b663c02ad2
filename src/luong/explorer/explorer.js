// The attention explorer: plain JavaScript, no library. It asks /api/models for the models,
// /api/translate for outputs with attention, and draws, per model, the n-best list, the
// heatmap (output tokens x source tokens, the weight on hover), the bar chart of the selected
// output step, and a prefix box that continues the output from an edited start.
"use strict";

const $ = (selector, root = document) => root.querySelector(selector);
const show = (symbol) => (symbol === " " ? "\u2423" : symbol);  // a space shows as ␣

function element(tag, attributes = {}, text = "") {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  if (text) node.textContent = text;
  return node;
}

function options() {
  return {
    beam: Number($("#beam").value) || 1,
    nbest: Number($("#nbest").value) || 1,
    alpha: Number($("#alpha").value) || 0,
  };
}

async function translate(model, source, prefix) {
  const body = { sources: [source], model, attention: true, prefix, ...options() };
  const response = await fetch("/api/translate", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) {
    const detail = typeof answer.detail === "string" ? answer.detail : JSON.stringify(answer.detail);
    throw new Error(`${model}: ${detail}`);
  }
  return answer.results[0];
}

function drawBars(panel, sourceTokens, weights, step, outputToken) {
  const bars = $(".bars", panel);
  const labels = $(".bar-labels", panel);
  bars.replaceChildren();
  labels.replaceChildren();
  sourceTokens.forEach((symbol, s) => {
    const w = weights[s] ?? 0;
    bars.append(element("div", {
      class: "bar", style: `height: ${Math.round(w * 88)}px`, title: `${show(symbol)}: ${w.toFixed(3)}`,
      "data-weight": String(w),
    }));
    labels.append(element("span", {}, show(symbol)));
  });
  $(".caption", panel).textContent =
    `step ${step + 1}: the weights output "${show(outputToken)}" puts on the source`;
}

function drawHypothesis(panel, result, index) {
  const hypothesis = result.hypotheses[index];
  const source = result.source_tokens;
  const forced = Number(panel.dataset.forced || 0);
  panel.querySelectorAll(".nbest li").forEach((li, i) => li.classList.toggle("selected", i === index));
  $(".output", panel).textContent = hypothesis.text;
  const table = $(".heatmap", panel);
  table.replaceChildren();
  const head = element("tr");
  head.append(element("th"));
  source.forEach((symbol) => head.append(element("th", { scope: "col" }, show(symbol))));
  table.appendChild(element("thead")).append(head);
  const body = table.appendChild(element("tbody"));
  const select = (t) => {
    body.querySelectorAll("tr").forEach((row, i) => row.classList.toggle("selected", i === t));
    drawBars(panel, source, hypothesis.attention[t], t, hypothesis.tokens[t]);
  };
  hypothesis.tokens.forEach((symbol, t) => {
    const row = element("tr", t < forced ? { class: "forced" } : {});
    const label = element("th", { scope: "row" }, show(symbol));
    label.addEventListener("click", () => select(t));
    row.append(label);
    hypothesis.attention[t].forEach((w, s) => {
      const cell = element("td", {
        class: "cell", "data-weight": String(w), "data-step": String(t), "data-source": String(s),
        style: `background: rgba(33, 102, 172, ${Math.max(0, Math.min(1, w)).toFixed(4)})`,
      });
      cell.addEventListener("mouseenter", () => {
        $(".hover", panel).textContent =
          `${show(symbol)} \u2190 ${show(source[s])}: ${w.toFixed(3)}`;
      });
      cell.addEventListener("click", () => select(t));
      row.append(cell);
    });
    body.append(row);
  });
  select(Math.min(forced, hypothesis.tokens.length - 1));
}

function drawResult(panel, result) {
  const list = $(".nbest", panel);
  list.replaceChildren();
  if (!result.hypotheses.length) {
    $(".output", panel).textContent = "";
    $(".heatmap", panel).replaceChildren();
    return;
  }
  result.hypotheses.forEach((h, i) => {
    const item = element("li");
    item.append(element("span", { class: "text" }, h.text));
    item.append(element("span", { class: "score" }, h.score === null ? "-inf" : h.score.toFixed(4)));
    item.addEventListener("click", () => drawHypothesis(panel, result, i));
    list.append(item);
  });
  drawHypothesis(panel, result, 0);
}

function makePanel(model) {
  const panel = element("section", { class: "panel", "data-model": model.name });
  const title = element("h2", {}, model.name + " ");
  title.append(element("small", {}, `${model.config.attention} attention`));
  panel.append(title);
  panel.append(element("div", { class: "output" }));
  panel.append(element("ol", { class: "nbest" }));
  const row = element("div", { class: "prefix-row" });
  row.append(element("label", {}, "prefix"));
  const prefix = element("input", { class: "prefix", type: "text", placeholder: "the start of the output" });
  const button = element("button", { class: "continue", type: "button" }, "Continue");
  row.append(prefix, button);
  panel.append(row);
  panel.append(element("div", { class: "hover" }, "hover a cell for its weight"));
  panel.append(element("table", { class: "heatmap" }));
  panel.append(element("div", { class: "bars" }));
  panel.append(element("div", { class: "bar-labels" }));
  panel.append(element("div", { class: "caption" }));
  const go = () => run([panel], prefix.value);
  button.addEventListener("click", go);
  prefix.addEventListener("keydown", (event) => { if (event.key === "Enter") go(); });
  return panel;
}

async function run(panels, prefix) {
  const source = $("#source").value;
  $("#status").textContent = "";
  document.body.dataset.busy = "1";
  try {
    await Promise.all(panels.map(async (panel) => {
      const result = await translate(panel.dataset.model, source, prefix);
      panel.dataset.forced = String(result.prefix_tokens);
      drawResult(panel, result);
    }));
  } catch (error) {
    $("#status").textContent = error.message;
  } finally {
    delete document.body.dataset.busy;
    document.body.dataset.done = String(Number(document.body.dataset.done || 0) + 1);
  }
}

async function start() {
  const response = await fetch("/api/models");
  const { models } = await response.json();
  const picker = $("#models");
  const panels = $("#panels");
  for (const model of models) {
    const label = element("label");
    const box = element("input", { type: "checkbox", value: model.name });
    box.checked = true;
    box.addEventListener("change", () => {
      panels.querySelector(`[data-model="${CSS.escape(model.name)}"]`).hidden = !box.checked;
    });
    label.append(box, " " + model.name);
    if (models.length > 1) picker.append(label);
    panels.append(makePanel(model));
  }
  $("#form").addEventListener("submit", (event) => {
    event.preventDefault();
    const shown = [...panels.querySelectorAll(".panel")].filter((p) => !p.hidden);
    shown.forEach((p) => { $(".prefix", p).value = ""; });
    run(shown, "");
  });
  document.body.dataset.ready = "1";
}

start();
