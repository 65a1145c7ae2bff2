// mailslot web: live arrivals and small conveniences. The page works without this file.
// Message text is only ever set with textContent; fetched HTML is parsed, never run.
"use strict";
(function () {
  document.documentElement.classList.add("js");

  function announce(arrivals) {
    var status = document.getElementById("live-status");
    if (!status || !arrivals.length) return;
    var last = arrivals[arrivals.length - 1];
    var more = arrivals.length > 1 ? " (and " + (arrivals.length - 1) + " more)" : "";
    status.textContent = "New: " + last.from + " → " + last.to.join(", ") + ": " +
      last.subject + more;
  }

  function busy(section) {
    var active = document.activeElement;
    return active && section.contains(active) &&
      (active.tagName === "INPUT" || active.tagName === "TEXTAREA" || active.tagName === "SELECT");
  }

  function refresh() {
    var sections = document.querySelectorAll("[data-live][id]");
    if (!sections.length) return;
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var fresh = new DOMParser().parseFromString(html, "text/html");
        sections.forEach(function (section) {
          var replacement = fresh.getElementById(section.id);
          if (replacement && !busy(section)) {
            section.replaceWith(document.adoptNode(replacement));
          }
        });
        document.body.dataset.refreshed = String(Date.now());
      })
      .catch(function () { /* the next arrival tries again */ });
  }

  if (window.EventSource) {
    var source = new EventSource("/events");
    source.addEventListener("mail", function (event) {
      var data = JSON.parse(event.data);
      announce(data.arrivals || []);
      refresh();
    });
    source.addEventListener("open", function () { document.body.dataset.live = "on"; });
  }

  // Settings: show only the fields of the chosen wake method.
  document.querySelectorAll("[data-method-select]").forEach(function (select) {
    var form = select.form;
    function show() {
      form.querySelectorAll("fieldset[data-method]").forEach(function (fieldset) {
        fieldset.hidden = fieldset.dataset.method !== select.value;
      });
    }
    select.addEventListener("change", show);
    show();
  });
})();
