// The control of one render-protocol question (docs/render-protocol.md), used by form cards and by
// the tool palette.
//
// A field knows three things about itself:
// - answers(): what the render protocol sends, `[]` for "untouched, take the default";
// - typed(): the JSON value for a tool call's arguments ({present: false} leaves it out);
// - check(final): a problem found before sending, as a sentence, or null. The host validates again and
//   its messages are the ones that count; this only refuses what is plainly wrong as it is typed.
//
// A plugin's `pattern` is shown as a hint and never run here: the browser's RegExp backtracks, and one
// hostile pattern would freeze the tab. The host checks it on Submit in linear time, and its verdict
// lands under the field.

import { el, uid, sameJson, show } from "./dom.js";

// Native inputs for the string formats.
const FORMAT_INPUTS = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

// JSON number syntax, which is what the host accepts for number and integer answers.
const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

// Builds the field for a question. `immediate(label)`, when given, turns an option question into
// buttons that answer on click (a form whose only question is an option question). `upload(file)`,
// when given, stores a file the person adds to a resource picker and resolves to `{uri, name}`.
export function createField(question, { immediate, upload } = {}) {
  switch (question.input) {
    case "text":
      return new TextField(question);
    case "number":
    case "integer":
      return new NumberField(question);
    case "boolean":
    case "single_select":
      return immediate ? new ButtonChoiceField(question, immediate) : new RadioField(question);
    case "multi_select":
      return new MultiField(question);
    case "text_list":
      return new TextListField(question);
    case "resource":
      return new ResourceField(question, upload);
    default:
      return new UnknownField(question);
  }
}

// Whether a form of these questions answers on the click of an option.
export function answersOnClick(questions) {
  return (
    questions.length === 1 &&
    ["boolean", "single_select"].includes(questions[0].input) &&
    (questions[0].options ?? []).length > 0
  );
}

class Field {
  constructor(question) {
    this.question = question;
    this.id = uid("q");
    this.touched = false;
    this.hasDefault = question.default !== undefined && question.default !== null;
    this.element = el("div", {
      class: "question",
      testid: "question",
      dataset: { questionId: question.id, input: question.input, required: question.required },
    });
    this.errorNode = el("p", {
      class: "field-error",
      id: `${this.id}-error`,
      testid: "field-error",
      hidden: true,
    });
    this.describedBy = [];
  }

  // The header line: the question's header, a required mark, and the question text when it says more.
  headerParts() {
    const q = this.question;
    const header = [el("span", { testid: "question-header", text: q.header })];
    if (q.sensitive) header.push(el("span", { class: "badge secret-mark", testid: "secret-mark", text: "secret" }));
    if (q.required) {
      header.push(
        el("span", { class: "required-mark", "aria-hidden": "true", text: " *" }),
        el("span", { class: "visually-hidden", text: " (required)" }),
      );
    }
    let text = null;
    if (q.question && q.question !== q.header) {
      text = el("p", { class: "question-text", id: `${this.id}-text`, testid: "question-text", text: q.question });
      this.describedBy.push(text.id);
    }
    return { header, text };
  }

  hint(sentence) {
    if (!sentence) return null;
    const node = el("p", { class: "hint", id: `${this.id}-hint`, testid: "question-hint", text: sentence });
    this.describedBy.push(node.id);
    return node;
  }

  describe(control) {
    control.setAttribute("aria-describedby", [...this.describedBy, this.errorNode.id].join(" "));
  }

  setError(message) {
    this.errorNode.textContent = message ?? "";
    this.errorNode.hidden = !message;
    this.control?.setAttribute("aria-invalid", message ? "true" : "false");
  }

  focus() {
    this.control?.focus();
  }

  setDisabled(disabled) {
    for (const node of this.element.querySelectorAll("input, button, select, textarea")) {
      node.disabled = disabled || node.dataset.locked === "true";
    }
  }

  // A missing value: fine unless required and there is no default to fill it.
  missing(final) {
    const q = this.question;
    if (!final || !q.required) return null;
    if (!this.touched && this.hasDefault) return null;
    return "is required";
  }
}

class TextField extends Field {
  constructor(question) {
    super(question);
    const q = question;
    const type = FORMAT_INPUTS[q.format] ?? "text";
    this.type = type;
    const { header, text } = this.headerParts();
    this.input = el("input", {
      id: this.id,
      type,
      class: "input",
      testid: "question-input",
      autocomplete: "off",
      spellcheck: "false",
      "aria-required": q.required ? "true" : null,
      step: type === "datetime-local" ? "1" : null,
    });
    this.control = this.input;
    if (this.hasDefault) {
      this.input.value = type === "datetime-local" ? toLocalInput(q.default) : show(q.default);
    }
    const hint = this.hint(textHint(q));
    const children = [el("label", { for: this.id, class: "question-header" }, header), text, this.input];
    if (q.suggestions?.length) children.push(this.suggestionList(q.suggestions));
    children.push(hint, this.errorNode);
    this.element.append(...children.filter(Boolean));
    this.describe(this.input);
    this.input.addEventListener("input", () => {
      this.touched = true;
      this.setError(this.check(false));
    });
  }

  // Suggestions: a datalist for the native combo box, and a visible list of buttons that fill the box.
  // Either may be ignored: free text stays allowed.
  suggestionList(suggestions) {
    const listId = `${this.id}-list`;
    this.input.setAttribute("list", listId);
    const datalist = el(
      "datalist",
      { id: listId },
      suggestions.map((s) => el("option", { value: s.label, text: s.description || s.label })),
    );
    const buttons = suggestions.map((s) =>
      el(
        "li",
        {},
        el(
          "button",
          {
            type: "button",
            class: "suggestion",
            testid: "suggestion",
            dataset: { label: s.label },
            onclick: () => {
              this.input.value = s.label;
              this.touched = true;
              this.setError(this.check(false));
              this.input.focus();
            },
          },
          optionContent(s, this.question.optionImages),
        ),
      ),
    );
    return el(
      "div",
      { class: "suggestions" },
      datalist,
      el("p", { class: "hint", text: "Suggestions (you may type something else):" }),
      el("ul", { class: "suggestion-list" }, buttons),
    );
  }

  // The text as it will be sent (date-time with the local offset).
  value() {
    const raw = this.input.value;
    return this.type === "datetime-local" ? fromLocalInput(raw) : raw;
  }

  check(final) {
    const q = this.question;
    if (this.input.validity.badInput) return q.format === "date" ? "is not a complete date" : "is not a complete date and time";
    const value = this.value();
    if (value === "") return this.missing(final);
    const length = [...value].length;
    if (q.minLength != null && length < q.minLength) return `must be at least ${q.minLength} characters`;
    if (q.maxLength != null && length > q.maxLength) return `must be at most ${q.maxLength} characters`;
    if (this.input.validity.typeMismatch) {
      return q.format === "email" ? "must be an email address like name@example.com" : "must be a full URL like https://example.com";
    }
    return null;
  }

  answers() {
    if (!this.touched && this.hasDefault) return [];
    const value = this.value();
    if (!this.touched && value === "") return [];
    return [value];
  }

  typed() {
    if (!this.touched && this.hasDefault) return { present: true, value: this.question.default };
    const value = this.value();
    if (value === "") return { present: false };
    const suggestion = (this.question.suggestions ?? []).find((s) => s.label === value);
    return { present: true, value: suggestion ? suggestion.value : value };
  }
}

class NumberField extends Field {
  constructor(question) {
    super(question);
    const q = question;
    this.integer = q.input === "integer";
    const { header, text } = this.headerParts();
    this.input = el("input", {
      id: this.id,
      type: "text",
      class: "input input-number",
      testid: "question-input",
      inputmode: this.integer ? "numeric" : "decimal",
      autocomplete: "off",
      "aria-required": q.required ? "true" : null,
    });
    this.control = this.input;
    if (this.hasDefault) this.input.value = String(q.default);
    const hint = this.hint(numberHint(q, this.integer));
    this.element.append(
      ...[el("label", { for: this.id, class: "question-header" }, header), text, this.input, hint, this.errorNode].filter(Boolean),
    );
    this.describe(this.input);
    this.input.addEventListener("input", () => {
      this.touched = true;
      this.setError(this.check(false));
    });
  }

  check(final) {
    const q = this.question;
    const text = this.input.value.trim();
    if (text === "") return this.missing(final);
    if (!NUMBER.test(text)) return this.integer ? "must be a whole number" : "must be a number (like 2.5 or -1)";
    const n = Number(text);
    if (!Number.isFinite(n)) return "is too large";
    if (this.integer && !Number.isInteger(n)) return "must be a whole number";
    if (q.minimum != null && n < q.minimum) return `must be at least ${q.minimum}`;
    if (q.maximum != null && n > q.maximum) return `must be at most ${q.maximum}`;
    if (q.exclusiveMinimum != null && n <= q.exclusiveMinimum) return `must be more than ${q.exclusiveMinimum}`;
    if (q.exclusiveMaximum != null && n >= q.exclusiveMaximum) return `must be less than ${q.exclusiveMaximum}`;
    if (q.multipleOf != null && q.multipleOf > 0) {
      const ratio = n / q.multipleOf;
      if (Math.abs(ratio - Math.round(ratio)) > 1e-9 * Math.max(1, Math.abs(ratio))) {
        return `must be a multiple of ${q.multipleOf}`;
      }
    }
    return null;
  }

  answers() {
    if (!this.touched && this.hasDefault) return [];
    const text = this.input.value.trim();
    if (!this.touched && text === "") return [];
    return [text];
  }

  typed() {
    if (!this.touched && this.hasDefault) return { present: true, value: this.question.default };
    const text = this.input.value.trim();
    return text === "" ? { present: false } : { present: true, value: Number(text) };
  }
}

// The option a question starts on: its default, else the first option.
function initialOption(question) {
  const options = question.options ?? [];
  return options.find((o) => sameJson(o.value, question.default)) ?? options[0] ?? null;
}

// The only images this page shows: an https URL, or a base64 data URI of an image. The host declines
// every other thumbnail; this check keeps anything else out of an image's source all the same.
const DATA_IMAGE = /^data:image\/[A-Za-z0-9.+-]+;base64,[A-Za-z0-9+/=]+$/;

export function safeImageSrc(src) {
  if (typeof src !== "string") return false;
  if (DATA_IMAGE.test(src)) return true;
  if (/\s/.test(src)) return false;
  try {
    return new URL(src).protocol === "https:";
  } catch {
    return false;
  }
}

// An option's image slot (when its question's options have images): the thumbnail, or a placeholder.
function imageSlot(option) {
  const src = option.thumbnail?.src;
  if (!safeImageSrc(src)) {
    return el("span", { class: "option-image is-empty", testid: "option-image", "aria-hidden": "true" });
  }
  const image = el("img", { class: "option-image", testid: "option-image", alt: "", loading: "lazy", referrerpolicy: "no-referrer" });
  image.src = src;
  return image;
}

function optionContent(option, images = false) {
  const words = [
    el("span", { class: "option-label", text: option.label }),
    option.description ? el("span", { class: "option-description", text: option.description }) : null,
  ];
  if (!images) return words;
  return [imageSlot(option), el("span", { class: "option-words" }, words)];
}

// Booleans and single selects inside a form with several questions: a radio group.
class RadioField extends Field {
  constructor(question) {
    super(question);
    const q = question;
    this.selected = initialOption(q);
    const { header, text } = this.headerParts();
    const name = `${this.id}-choice`;
    this.radios = (q.options ?? []).map((option) => {
      const input = el("input", {
        type: "radio",
        name,
        class: "choice-input",
        testid: "option-input",
        value: option.label,
        checked: option === this.selected,
        onchange: () => {
          this.selected = option;
          this.touched = true;
          this.setError(null);
        },
      });
      return el(
        "label",
        { class: "choice", testid: "option", dataset: { label: option.label, default: sameJson(option.value, q.default) || null } },
        input,
        el("span", { class: "choice-text" }, optionContent(option, q.optionImages)),
      );
    });
    this.control = this.radios[0]?.querySelector("input") ?? null;
    const fieldset = el(
      "fieldset",
      { class: "choices", "aria-required": q.required ? "true" : null },
      el("legend", { class: "question-header" }, header),
      text,
      el("div", { class: "choice-list" }, this.radios),
    );
    this.element.append(fieldset, this.errorNode);
    this.describe(fieldset);
  }

  focus() {
    const checked = this.element.querySelector("input:checked") ?? this.control;
    checked?.focus();
  }

  check() {
    return this.selected ? null : "has no options to choose from";
  }

  answers() {
    return this.selected ? [this.selected.label] : [];
  }

  typed() {
    return this.selected ? { present: true, value: this.selected.value } : { present: false };
  }
}

// The only question of a form, with options: one button per option, and a click answers the form.
// The default (else the first option) is marked and takes the focus first.
class ButtonChoiceField extends Field {
  constructor(question, immediate) {
    super(question);
    const q = question;
    const initial = initialOption(q);
    const { header, text } = this.headerParts();
    this.buttons = (q.options ?? []).map((option) =>
      el(
        "button",
        {
          type: "button",
          class: option === initial ? "option-button is-initial" : "option-button",
          testid: "option",
          dataset: { label: option.label, default: sameJson(option.value, q.default) || null },
          onclick: () => immediate(option.label),
        },
        optionContent(option, q.optionImages),
      ),
    );
    this.control = this.buttons[(q.options ?? []).indexOf(initial)] ?? this.buttons[0] ?? null;
    const group = el(
      "div",
      { class: "choices", role: "group", "aria-labelledby": `${this.id}-legend` },
      el("p", { class: "question-header", id: `${this.id}-legend` }, header),
      text,
      el("div", { class: "option-buttons" }, this.buttons),
    );
    this.element.append(group, this.errorNode);
    this.describe(group);
  }

  check() {
    return null;
  }

  answers() {
    return [];
  }

  typed() {
    return { present: false };
  }
}

// Several options: checkboxes, answered in the order the person ticked them, within the item limits.
class MultiField extends Field {
  constructor(question) {
    super(question);
    const q = question;
    const options = q.options ?? [];
    const defaults = Array.isArray(q.default) ? q.default : [];
    this.order = defaults
      .map((value) => options.find((o) => sameJson(o.value, value)))
      .filter(Boolean)
      .map((o) => o.label);
    const { header, text } = this.headerParts();
    const hint = this.hint(itemsHint(q));
    this.boxes = options.map((option) => {
      const input = el("input", {
        type: "checkbox",
        class: "choice-input",
        testid: "option-input",
        value: option.label,
        checked: this.order.includes(option.label),
        onchange: (event) => {
          this.touched = true;
          if (event.target.checked) this.order.push(option.label);
          else this.order = this.order.filter((label) => label !== option.label);
          this.applyLimit();
          this.setError(this.check(false));
        },
      });
      return el(
        "label",
        { class: "choice", testid: "option", dataset: { label: option.label } },
        input,
        el("span", { class: "choice-text" }, optionContent(option, q.optionImages)),
      );
    });
    this.inputs = this.boxes.map((box) => box.querySelector("input"));
    this.control = this.inputs[0] ?? null;
    const fieldset = el(
      "fieldset",
      { class: "choices" },
      el("legend", { class: "question-header" }, header),
      text,
      el("div", { class: "choice-list" }, this.boxes),
      hint,
    );
    this.element.append(fieldset, this.errorNode);
    this.describe(fieldset);
    this.applyLimit();
  }

  // At the maximum, the unticked boxes are locked, so the limit cannot be passed.
  applyLimit() {
    const max = this.question.maxItems;
    const full = max != null && this.order.length >= max;
    for (const input of this.inputs) {
      const locked = full && !input.checked;
      input.dataset.locked = String(locked);
      input.disabled = locked || this.disabled === true;
    }
  }

  setDisabled(disabled) {
    this.disabled = disabled;
    super.setDisabled(disabled);
    this.applyLimit();
  }

  check(final) {
    const q = this.question;
    if (!final) return null;
    if (!this.touched && this.hasDefault) return null;
    if (q.minItems != null && this.order.length < q.minItems) {
      return `choose at least ${q.minItems} ${q.minItems === 1 ? "option" : "options"}`;
    }
    if (q.maxItems != null && this.order.length > q.maxItems) return `choose at most ${q.maxItems}`;
    return null;
  }

  answers() {
    if (!this.touched && this.hasDefault) return [];
    if (!this.touched && this.order.length === 0) return [];
    return this.order.length ? [...this.order] : [""];
  }

  typed() {
    const options = this.question.options ?? [];
    if (!this.touched && this.hasDefault) return { present: true, value: this.question.default };
    if (!this.touched && this.order.length === 0) return { present: false };
    return { present: true, value: this.order.map((label) => options.find((o) => o.label === label)?.value) };
  }
}

// A list of texts (`text_list`): one box per item, an Add button, and the suggestions as buttons that
// add an item. Each item follows the question's text rules; the host checks them again.
class TextListField extends Field {
  constructor(question) {
    super(question);
    const q = question;
    const { header, text } = this.headerParts();
    this.list = el("ol", { class: "text-list", testid: "text-list" });
    this.items = [];
    const add = el("button", {
      type: "button",
      class: "button",
      testid: "add-item",
      text: "Add",
      onclick: () => this.addItem("").focus(),
    });
    const hint = this.hint(listHint(q));
    const chips = (q.suggestions ?? []).map((s) =>
      el(
        "li",
        {},
        el(
          "button",
          { type: "button", class: "suggestion", testid: "suggestion", dataset: { label: s.label }, onclick: () => this.addItem(s.label) },
          optionContent(s, q.optionImages),
        ),
      ),
    );
    const group = el(
      "div",
      { class: "choices", role: "group", "aria-labelledby": `${this.id}-legend` },
      el("p", { class: "question-header", id: `${this.id}-legend` }, header),
      text,
      this.list,
      add,
      chips.length ? el("p", { class: "hint", text: "Suggestions (you may type something else):" }) : null,
      chips.length ? el("ul", { class: "suggestion-list" }, chips) : null,
      hint,
    );
    this.element.append(group, this.errorNode);
    this.describe(group);
    for (const value of Array.isArray(q.default) ? q.default : []) this.addItem(show(value), false);
    this.control = add;
  }

  // Adds an item box holding `value`; returns its input.
  addItem(value, touch = true) {
    const input = el("input", { type: "text", class: "input", testid: "item-input", autocomplete: "off", spellcheck: "false", value });
    input.setAttribute("aria-label", `${this.question.header}, item`);
    const item = el(
      "li",
      { class: "text-item" },
      input,
      el("button", {
        type: "button",
        class: "button",
        testid: "remove-item",
        text: "Remove",
        onclick: () => {
          this.items = this.items.filter((other) => other !== input);
          item.remove();
          this.touched = true;
          this.setError(this.check(false));
        },
      }),
    );
    input.addEventListener("input", () => {
      this.touched = true;
      this.setError(this.check(false));
    });
    this.items.push(input);
    this.list.append(item);
    if (touch) {
      this.touched = true;
      this.setError(this.check(false));
    }
    return input;
  }

  values() {
    return this.items.map((input) => input.value).filter((value) => value !== "");
  }

  check(final) {
    const q = this.question;
    for (const value of this.values()) {
      const length = [...value].length;
      if (q.minLength != null && length < q.minLength) return `each item must be at least ${q.minLength} characters`;
      if (q.maxLength != null && length > q.maxLength) return `each item must be at most ${q.maxLength} characters`;
    }
    if (!final || (!this.touched && this.hasDefault)) return null;
    const count = this.values().length;
    if (q.minItems != null && count < q.minItems) return `add at least ${q.minItems} ${q.minItems === 1 ? "item" : "items"}`;
    if (q.maxItems != null && count > q.maxItems) return `add at most ${q.maxItems}`;
    return null;
  }

  answers() {
    if (!this.touched) return [];
    const values = this.values();
    return values.length ? values : [""];
  }

  typed() {
    if (!this.touched && this.hasDefault) return { present: true, value: this.question.default };
    if (!this.touched) return { present: false };
    const suggestions = this.question.suggestions ?? [];
    return { present: true, value: this.values().map((v) => suggestions.find((s) => s.label === v)?.value ?? v) };
  }
}

// A resource picker (`resource`): the plugin's resources as radio buttons (one) or checkboxes
// (several; implicit selection starts with every one ticked), and, when the picker takes uploads
// and the card can store them, a file chooser whose files join the answer as the host's file:// URIs.
class ResourceField extends Field {
  constructor(question, upload) {
    super(question);
    const q = question;
    this.multiple = q.multiSelect;
    const options = q.options ?? [];
    const defaults = this.multiple ? (Array.isArray(q.default) ? q.default : []) : q.default === undefined ? [] : [q.default];
    // Chosen entries in order: {label} for an option, {uri, name} for an added file.
    this.chosen = options.filter((o) => defaults.some((d) => sameJson(d, o.value))).map((o) => ({ label: o.label }));
    const { header, text } = this.headerParts();
    const name = `${this.id}-choice`;
    this.list = el("div", { class: "choice-list" });
    for (const option of options) this.list.append(this.choiceFor(option.label, optionContent(option, q.optionImages), name, { label: option.label }));
    const uploads = q.resource?.uploads;
    let chooser = null;
    if (uploads && upload) {
      const input = el("input", {
        type: "file",
        class: "file-input",
        testid: "file-input",
        id: `${this.id}-file`,
        multiple: this.multiple || null,
        accept: (uploads.accept ?? []).join(",") || null,
      });
      input.addEventListener("change", async () => {
        const files = [...input.files];
        input.value = "";
        for (const file of files) {
          try {
            this.setError(null);
            const stored = await upload(file);
            const entry = { uri: stored.uri, name: stored.name };
            const content = [el("span", { class: "option-label", text: stored.name }), el("span", { class: "option-description", text: "Added from this computer" })];
            this.list.append(this.choiceFor(stored.uri, content, name, entry, true));
          } catch (error) {
            this.setError(`could not add ${file.name}: ${error.message ?? error}`);
          }
        }
      });
      chooser = el("p", { class: "file-chooser" }, el("label", { for: input.id, class: "hint", text: this.multiple ? "Add files from this computer: " : "Or a file from this computer: " }), input);
    }
    const fieldset = el(
      "fieldset",
      { class: "choices", "aria-required": q.required ? "true" : null },
      el("legend", { class: "question-header" }, header),
      text,
      this.list,
      chooser,
      this.hint(this.multiple ? itemsHint(q) : null),
    );
    this.element.append(fieldset, this.errorNode);
    this.describe(fieldset);
    this.control = this.list.querySelector("input");
  }

  // One choice: a checkbox (several) or radio (one), ticked when `entry` is chosen (or `fresh`).
  choiceFor(value, content, name, entry, fresh = false) {
    const key = entry.uri ?? entry.label;
    const same = (other) => (other.uri ?? other.label) === key;
    if (fresh) {
      if (!this.multiple) this.chosen = [];
      this.chosen.push(entry);
      this.touched = true;
    }
    const input = el("input", {
      type: this.multiple ? "checkbox" : "radio",
      name: this.multiple ? null : name,
      class: "choice-input",
      testid: "option-input",
      value,
      checked: this.chosen.some(same),
      onchange: (event) => {
        this.touched = true;
        if (!this.multiple) this.chosen = [entry];
        else if (event.target.checked) this.chosen.push(entry);
        else this.chosen = this.chosen.filter((other) => !same(other));
        this.setError(this.check(false));
      },
    });
    if (fresh && !this.multiple) for (const other of this.list.querySelectorAll("input")) other.checked = false;
    input.checked = this.chosen.some(same);
    return el("label", { class: "choice", testid: "option", dataset: { label: entry.label ?? entry.name } }, input, el("span", { class: "choice-text" }, content));
  }

  check(final) {
    const q = this.question;
    if (!final || (!this.touched && this.hasDefault)) return null;
    if (!this.multiple) return this.chosen.length === 0 ? this.missing(final) : null;
    if (q.minItems != null && this.chosen.length < q.minItems) return `choose at least ${q.minItems}`;
    if (q.maxItems != null && this.chosen.length > q.maxItems) return `choose at most ${q.maxItems}`;
    if (q.required && this.chosen.length === 0) return "is required";
    return null;
  }

  answers() {
    if (!this.touched) return [];
    const answers = this.chosen.map((entry) => entry.uri ?? entry.label);
    return answers.length ? answers : [""];
  }

  typed() {
    const options = this.question.options ?? [];
    if (!this.touched && this.hasDefault) return { present: true, value: this.question.default };
    if (!this.touched) return { present: false };
    const uris = this.chosen.map((entry) => entry.uri ?? options.find((o) => o.label === entry.label)?.value);
    if (this.multiple) return { present: true, value: uris };
    return uris.length ? { present: true, value: uris[0] } : { present: false };
  }
}

// An input kind this page does not know (a newer host): shown, never answered.
class UnknownField extends Field {
  constructor(question) {
    super(question);
    const { header, text } = this.headerParts();
    this.element.append(
      el("p", { class: "question-header" }, header),
      ...(text ? [text] : []),
      el("p", { class: "hint", text: `This page cannot draw "${question.input}" questions.` }),
      this.errorNode,
    );
  }

  check() {
    return "cannot be answered on this page";
  }

  answers() {
    return [];
  }

  typed() {
    return { present: false };
  }
}

function textHint(q) {
  const parts = [];
  if (q.format === "email") parts.push("An email address");
  if (q.format === "uri") parts.push("A full URL, like https://example.com");
  if (q.format === "date-time") parts.push("Local time; sent with your time zone");
  if (q.minLength != null && q.maxLength != null) parts.push(`${q.minLength} to ${q.maxLength} characters`);
  else if (q.minLength != null) parts.push(`At least ${q.minLength} characters`);
  else if (q.maxLength != null) parts.push(`At most ${q.maxLength} characters`);
  if (q.pattern) parts.push(`Must match ${q.pattern}`);
  return parts.join(" · ");
}

function numberHint(q, integer) {
  const parts = [integer ? "A whole number" : "A number"];
  const low = q.minimum != null ? `${q.minimum}` : null;
  const high = q.maximum != null ? `${q.maximum}` : null;
  if (low !== null && high !== null) parts.push(`from ${low} to ${high}`);
  else if (low !== null) parts.push(`at least ${low}`);
  else if (high !== null) parts.push(`at most ${high}`);
  if (q.exclusiveMinimum != null) parts.push(`more than ${q.exclusiveMinimum}`);
  if (q.exclusiveMaximum != null) parts.push(`less than ${q.exclusiveMaximum}`);
  if (q.multipleOf != null) parts.push(`a multiple of ${q.multipleOf}`);
  return parts.join(", ");
}

function listHint(q) {
  const parts = [textHint(q), itemsHint(q).replace("Choose", "Items:")].filter((part) => part && part !== "Items: any");
  return parts.join(" · ");
}

function itemsHint(q) {
  const { minItems: min, maxItems: max } = q;
  if (min != null && max != null) return min === max ? `Choose ${min}` : `Choose ${min} to ${max}`;
  if (min != null) return `Choose at least ${min}`;
  if (max != null) return `Choose at most ${max}`;
  return "Choose any";
}

function pad(n) {
  return String(n).padStart(2, "0");
}

// An RFC 3339 default as the value of a datetime-local input, in local time.
function toLocalInput(text) {
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) return "";
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

// A datetime-local value as RFC 3339 with the local offset: 2026-11-29T10:30:00+01:00.
function fromLocalInput(local) {
  if (!local) return "";
  const full = local.length === 16 ? `${local}:00` : local;
  const date = new Date(full);
  if (Number.isNaN(date.getTime())) return local;
  const offset = -date.getTimezoneOffset();
  const sign = offset >= 0 ? "+" : "-";
  const abs = Math.abs(offset);
  return `${full}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}
