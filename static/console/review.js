// Review queues and the trajectory viewer: keyboard-first decisions, step labels, and the lease heartbeat.
// No dependencies. Keys are handled in the capture phase so the console-wide keys in app.js (and its
// "?" alert) do not also fire for the keys this page owns; "g j" still reaches app.js.
(function () {
  "use strict";

  var LABEL_KEYS = { c: "correct", x: "erroneous", v: "recovery" };

  function $(sel, root) { return (root || document).querySelector(sel); }
  function $all(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }

  function csrfToken() {
    var input = $("input[name=csrfmiddlewaretoken]");
    if (input) return input.value;
    var m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return m ? decodeURIComponent(m[1]) : "";
  }

  function isTyping(el) {
    return el && (/^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName) || el.isContentEditable);
  }

  // ---- steps (viewer and trajectory queue)
  var steps = [], current = -1;

  function setCurrent(i, focus) {
    if (!steps.length) return;
    current = Math.max(0, Math.min(steps.length - 1, i));
    steps.forEach(function (s, n) { s.classList.toggle("current", n === current); });
    var el = steps[current];
    if (current === 0) window.scrollTo(0, 0);  // the first step: show the verdict and costs above it too
    else el.scrollIntoView({ block: "nearest" });
    if (focus) el.focus({ preventScroll: true });
    document.body.dataset.currentStep = el.dataset.index;
  }

  function setLabel(step, label) {
    var next = step.dataset.label === label ? "" : label;  // the same key again clears the label
    step.dataset.label = next;
    $all("[data-set-label]", step).forEach(function (b) { b.classList.toggle("on", b.dataset.setLabel === next); });
  }

  function collectLabels() {
    return steps.map(function (s) {
      var c = $(".step-comment", s);
      return { index: parseInt(s.dataset.index, 10), label: s.dataset.label || "", comment: c ? c.value : "" };
    }).filter(function (e) { return e.label || e.comment; });
  }

  // ---- the decision form
  var form, review, decision = "", reason = "", leaseLost = false, submitting = false;

  function say(text, need) {
    var el = $("#chosen");
    if (!el) return;
    el.textContent = text;
    el.classList.toggle("need", !!need);
  }

  function describe() {
    if (!decision) return "";
    if (decision === "reject") {
      var r = $(".reason-btn.on");
      return r ? "Reject: " + r.textContent.replace(/^\s*\d\s*/, "") + " — Ctrl+Enter to submit" : "Reject: pick a reason, 1–9";
    }
    var names = { approve: "Approve", edit: "Edit", skip: "Skip" };
    return names[decision] + " — Ctrl+Enter to submit";
  }

  function choose(d) {
    decision = d;
    $("#f-decision").value = d;
    $all(".dec").forEach(function (b) { b.classList.toggle("on", b.dataset.decision === d); });
    var reasons = $("#reasons");
    if (reasons) reasons.hidden = d !== "reject";
    if (d !== "reject") pickReason("");
    var edit = $("#edit-panel");
    if (edit) {
      edit.hidden = d !== "edit";
      if (d === "edit") {
        var t = $("#f-instruction");
        t.focus();
        t.setSelectionRange(t.value.length, t.value.length);
      }
    }
    say(describe(), d === "reject" && !reason);
  }

  function pickReason(code) {
    reason = code;
    $("#f-reason").value = code;
    $all(".reason-btn").forEach(function (b) { b.classList.toggle("on", b.dataset.reason === code); });
    if (code) say(describe());
  }

  function ready() {
    if (leaseLost) { say("Your claim expired: this decision cannot be submitted.", true); return false; }
    if (!decision) { say("Choose a decision first: a, r, " + ($("#edit-panel") ? "e, " : "") + "s.", true); return false; }
    if (decision === "reject" && !reason && $(".reason-btn")) { say("Pick a reason: 1–9.", true); return false; }
    var labels = $("#f-step-labels");
    if (labels) labels.value = JSON.stringify(collectLabels());
    return true;
  }

  function submit() {
    if (submitting || !ready()) return;
    submitting = true;
    $("#submit-decision").disabled = true;
    say("Submitting…");
    form.submit();
  }

  function loseLease() {
    leaseLost = true;
    var banner = $("#lease-banner");
    if (banner) banner.hidden = false;
    var btn = $("#submit-decision");
    if (btn) btn.disabled = true;
    var state = $("#lease-state");
    if (state) state.textContent = "claim lost";
    document.body.dataset.lease = "lost";
  }

  function heartbeat() {
    var every = parseFloat(review.dataset.renewEvery || "60") * 1000;
    function renew() {
      if (leaseLost) return;
      fetch(review.dataset.renewUrl, {
        method: "POST", credentials: "same-origin",
        headers: { "X-CSRFToken": csrfToken(), "X-Requested-With": "fetch" }
      }).then(function (r) {
        if (r.status === 409 || r.status === 404 || r.status === 403) { loseLost(); return null; }
        return r.ok ? r.json() : null;
      }).then(function (body) {
        if (body && body.lease_expires_at) {
          var t = $("#lease-state time");
          if (t) { t.dateTime = body.lease_expires_at; t.textContent = new Date(body.lease_expires_at).toLocaleTimeString(); }
          document.body.dataset.lease = "held";
        }
      }).catch(function () { /* offline for a moment: try again at the next beat */ });
    }
    function loseLost() { loseLease(); clearInterval(timer); }
    var timer = setInterval(renew, every);
    window.__flywheelRenew = renew;  // lets tests (and a curious user) renew now
  }

  // ---- keyboard
  var pendingG = false;

  function toggleSheet(open) {
    var sheet = $("#cheatsheet");
    if (!sheet) return;
    sheet.hidden = open === undefined ? !sheet.hidden : !open;
  }

  function onKey(e) {
    var sheet = $("#cheatsheet");
    if (sheet && !sheet.hidden) {
      if (e.key === "Escape" || e.key === "?") { toggleSheet(false); e.preventDefault(); e.stopImmediatePropagation(); }
      return;
    }
    if (form && e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault(); e.stopImmediatePropagation(); submit(); return;
    }
    if (isTyping(e.target)) {
      if (e.key === "Escape") { e.target.blur(); e.preventDefault(); }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var wasG = pendingG;
    pendingG = e.key === "g";
    if (wasG) return;  // "g <key>" belongs to the console's navigation keys
    var handled = true;
    var k = e.key;
    if (k === "?") toggleSheet();
    else if (k === "j" || k === "ArrowDown") { if (steps.length) setCurrent(current + 1, true); else handled = false; }
    else if (k === "k" || k === "ArrowUp") { if (steps.length) setCurrent(current - 1, true); else handled = false; }
    else if (!form) handled = false;
    else if (k === "a") choose("approve");
    else if (k === "r") choose("reject");
    else if (k === "s") choose("skip");
    else if (k === "e" && $("#edit-panel")) choose("edit");
    else if (/^[1-9]$/.test(k) && decision === "reject") {
      var btn = $all(".reason-btn")[parseInt(k, 10) - 1];
      if (btn) pickReason(btn.dataset.reason); else say("No reason " + k + " in this queue.", true);
    }
    else if (LABEL_KEYS[k] && steps.length && review.dataset.queue === "trajectory") {
      if (current < 0) setCurrent(0);
      setLabel(steps[current], LABEL_KEYS[k]);
    }
    else if (k === "m" && steps.length && review.dataset.queue === "trajectory") {
      if (current < 0) setCurrent(0);
      var c = $(".step-comment", steps[current]);
      if (c) c.focus();
    }
    else if (k === "/") { var cm = $("#f-comment"); if (cm) cm.focus(); }
    else if (k === "Enter") submit();
    else handled = false;
    if (handled) { e.preventDefault(); e.stopImmediatePropagation(); }
  }

  document.addEventListener("DOMContentLoaded", function () {
    steps = $all("#steps > li.step");
    review = $("#review");
    form = $("#decide-form");
    if (!review && !steps.length) return;
    window.addEventListener("keydown", onKey, true);
    if (steps.length) { current = 0; steps[0].classList.add("current"); document.body.dataset.currentStep = steps[0].dataset.index; }
    steps.forEach(function (s, n) {
      s.addEventListener("click", function () { if (current !== n) setCurrent(n); });
      $all("[data-set-label]", s).forEach(function (b) {
        b.addEventListener("click", function () { setLabel(s, b.dataset.setLabel); });
      });
    });
    if (!form) return;
    $all(".dec").forEach(function (b) { b.addEventListener("click", function () { choose(b.dataset.decision); }); });
    $all(".reason-btn").forEach(function (b) { b.addEventListener("click", function () { pickReason(b.dataset.reason); }); });
    form.addEventListener("submit", function (e) {
      if (submitting || !ready()) { e.preventDefault(); return; }
      submitting = true;
    });
    var initial = $("#f-decision").value;
    if (initial) { var r = $("#f-reason").value; choose(initial); if (r) pickReason(r); }
    if (review.dataset.leaseLost === "1") loseLease(); else heartbeat();
    document.body.dataset.reviewReady = "1";
  });
})();
