// pluginsdk console: the only script. Live regions poll their fragment URL until it says it is final.
"use strict";
(function () {
  function poll(section) {
    var url = section.getAttribute("data-poll");
    if (!url || section.querySelector("[data-final]")) return;
    window.setTimeout(function () {
      fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (html === null) return;
          var doc = new DOMParser().parseFromString(html, "text/html");
          section.replaceChildren.apply(section, Array.prototype.slice.call(doc.body.childNodes));
          poll(section);
        })
        .catch(function () { poll(section); });
    }, 500);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-poll]").forEach(poll);
  });
})();
