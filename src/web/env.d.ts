// The stylesheet is imported for the bundler, which emits it as dist/web/app.css.
declare module '*.css'
