// SVG files are bundled as strings (the JupyterLab builder's raw loader).
declare module '*.svg' {
  const value: string;
  export default value;
}
